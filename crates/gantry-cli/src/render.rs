//! What `gantry exec` shows while the turn runs: a readable live view on
//! stderr, or with `--json` the lines of [`crate::exec_json`] on stdout.

use std::io::IsTerminal;

use gantry_core::Notification;
use gantry_types::{
    DeltaKind, EventPayload, Item, ItemKind, ItemStatus, Thread, ThreadId, TodoStatus, Turn,
};

use crate::exec_json::{self, Line};

/// Lines of command output shown under a finished command.
const OUTPUT_LINES: usize = 6;

/// Renders notifications.
pub(crate) struct LiveView {
    json: bool,
    color: bool,
    /// The live view is mid-line (streamed agent text without a newline yet).
    mid_line: bool,
}

impl LiveView {
    /// A view; `json` switches to the `--json` lines on stdout.
    pub(crate) fn new(json: bool) -> Self {
        Self {
            json,
            color: std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
            mid_line: false,
        }
    }

    /// Announces the thread the turn runs on (a line of its own only in
    /// JSON: the live view names the thread in its closing line).
    pub(crate) fn thread_started(&mut self, thread_id: &ThreadId, resumed: bool) {
        if self.json {
            exec_json::print(&Line::thread_started(thread_id, resumed));
        }
    }

    /// Shows one notification.
    pub(crate) fn show(&mut self, n: &Notification) {
        if self.json {
            if let Some(line) = Line::from_notification(n) {
                exec_json::print(&line);
            }
            return;
        }
        match n {
            Notification::Delta(d) => {
                if let DeltaKind::AgentText(t) = &d.kind {
                    eprint!("{t}");
                    self.mid_line = !t.ends_with('\n');
                }
            }
            Notification::Event(e) => match &e.payload {
                EventPayload::ItemStarted { item } => self.item_started(item),
                EventPayload::ItemCompleted { item } => self.item_completed(item),
                _ => {}
            },
            Notification::Lagged { .. } => {}
        }
    }

    /// A one-line note from the CLI itself.
    pub(crate) fn note(&mut self, text: &str) {
        if !self.json {
            self.line(&self.dim(text));
        }
    }

    /// The closing line: status, rounds, tokens, cost (when the catalog
    /// knows the model's prices), time.
    pub(crate) fn summary(&mut self, turn: &Turn, thread: &Thread) {
        if self.json {
            return;
        }
        let u = &turn.usage;
        let secs = turn.duration_ms().unwrap_or(0) as f64 / 1000.0;
        // Zero means the catalog has no prices for the model: say nothing.
        let cost = if turn.cost_usd > 0.0 || thread.cost_usd > 0.0 {
            format!(
                " · cost {} (thread {})",
                dollars(turn.cost_usd),
                dollars(thread.cost_usd)
            )
        } else {
            String::new()
        };
        let text = format!(
            "turn {:?} · {} rounds · {secs:.1}s · tokens in {} (cached {}) out {} (reasoning {}){cost} · thread total {} · thread {}",
            turn.status,
            turn.rounds,
            u.input_tokens,
            u.cached_input_tokens,
            u.output_tokens,
            u.reasoning_tokens,
            thread.usage.total(),
            thread.id,
        )
        .to_lowercase();
        self.line(&self.dim(&text));
    }

    fn item_started(&mut self, item: &Item) {
        match &item.kind {
            ItemKind::CommandExecution { command, .. } => {
                self.line(&format!("{} {command}", self.bold("$")));
            }
            ItemKind::Reasoning { .. } => self.line(&self.dim("thinking...")),
            _ => {}
        }
    }

    fn item_completed(&mut self, item: &Item) {
        match &item.kind {
            ItemKind::AgentMessage { .. } => {
                if self.mid_line {
                    eprintln!();
                    self.mid_line = false;
                }
            }
            ItemKind::CommandExecution {
                output,
                exit_code,
                duration_ms,
                ..
            } => {
                let lines: Vec<&str> = output.lines().collect();
                let skip = lines.len().saturating_sub(OUTPUT_LINES);
                if skip > 0 {
                    self.line(&self.dim(&format!("  ... {skip} more lines")));
                }
                for l in &lines[skip..] {
                    self.line(&self.dim(&format!("  {l}")));
                }
                let secs = duration_ms.unwrap_or(0) as f64 / 1000.0;
                let status = match (exit_code, item.status) {
                    (_, ItemStatus::Interrupted) => "interrupted".to_owned(),
                    (Some(code), _) => format!("exit {code}"),
                    (None, _) => "killed".to_owned(),
                };
                self.line(&self.dim(&format!("  ({status}, {secs:.2}s)")));
            }
            ItemKind::FileChange { path, diff } => {
                let stat = gantry_core::projection::diff_stat(diff);
                self.line(&format!(
                    "{} {path} (+{} -{})",
                    self.bold("edited"),
                    stat.added,
                    stat.removed
                ));
            }
            ItemKind::ToolCall { name, error, .. } => {
                let text = match error {
                    Some(e) => format!("{name}: error: {e}"),
                    None => format!("{name}: ok"),
                };
                self.line(&format!("{} {text}", self.bold("tool")));
            }
            ItemKind::Error { message } => self.line(&format!("{} {message}", self.red("error:"))),
            ItemKind::StructuredOutput { payload, .. } => {
                self.line(&format!("{} {payload}", self.bold("output")));
            }
            ItemKind::Approval {
                request,
                decision,
                resolved_by,
                ..
            } => {
                let what = request.command.as_deref().unwrap_or(&request.tool);
                let answer = decision.as_ref().map_or("unanswered".to_owned(), |d| {
                    format!("{:?}", d.kind()).to_lowercase()
                });
                let by = resolved_by.map_or("-", |b| b.name());
                self.line(&format!(
                    "{} {what}: {answer} (by {by})",
                    self.bold("approval")
                ));
            }
            ItemKind::TodoList { todos } => {
                self.line(&format!("{} {} items", self.bold("todos"), todos.len()));
                for t in todos {
                    let mark = match t.status {
                        TodoStatus::Completed => "[x]",
                        TodoStatus::InProgress => "[~]",
                        TodoStatus::Cancelled => "[-]",
                        TodoStatus::Pending => "[ ]",
                    };
                    self.line(&self.dim(&format!("  {mark} {}", t.content)));
                }
            }
            ItemKind::UserInput {
                questions,
                resolved_by,
                ..
            } => {
                let asked: Vec<&str> = questions.iter().map(|q| q.header.as_str()).collect();
                let by = resolved_by.map_or("-", |b| b.name());
                self.line(&format!(
                    "{} {} (by {by})",
                    self.bold("asked"),
                    asked.join(", ")
                ));
            }
            ItemKind::ExternalTask { tool, error, .. } => {
                let text = match error {
                    Some(e) => format!("{tool}: error: {e}"),
                    None => format!("{tool}: completed by a client"),
                };
                self.line(&format!("{} {text}", self.bold("external")));
            }
            ItemKind::ContextCompaction {
                tokens_before,
                tokens_after,
                trigger,
                ..
            } => self.line(&self.dim(&format!(
                "context compacted ({trigger}): ~{tokens_before} -> ~{tokens_after} tokens"
            ))),
            ItemKind::UserMessage { .. } | ItemKind::Reasoning { .. } => {}
        }
        // A failed command or edit: its first line says why.
        if item.status == ItemStatus::Failed
            && matches!(
                item.kind,
                ItemKind::CommandExecution { .. } | ItemKind::FileChange { .. }
            )
            && let Some(out) = item.tool_call.as_ref().and_then(|c| c.output.as_deref())
        {
            self.line(&self.red(&format!("  {}", out.lines().next().unwrap_or(""))));
        }
    }

    fn line(&mut self, text: &str) {
        if self.mid_line {
            eprintln!();
            self.mid_line = false;
        }
        eprintln!("{text}");
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }

    fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    fn red(&self, text: &str) -> String {
        self.paint("31", text)
    }
}

/// `$0.0123`; amounts below a hundredth of a cent are not rounded to zero.
fn dollars(usd: f64) -> String {
    if usd > 0.0 && usd < 0.0001 {
        "<$0.0001".to_owned()
    } else {
        format!("${usd:.4}")
    }
}

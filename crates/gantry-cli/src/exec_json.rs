//! `gantry exec --json`: the lines it prints, the CLI's own contract.
//!
//! One JSON object per line on stdout, tagged by `type`. Every field is
//! declared here and filled by explicit mapping functions from the engine's
//! notifications, so a change to the stored event format (`gantry-types`)
//! does not change this output: it breaks the build of this file instead.
//!
//! Every field of a line is always present; `null` says "unknown" or "not
//! yet". Field names are snake_case, enum values lowercase snake_case
//! strings. Lines that come from a stored event carry its `seq` (position in
//! the thread's log, dense and increasing), so a script can match them with
//! `gantry threads show --json`; live streaming lines have none.
//!
//! What a turn produces, in order:
//!
//! | `type` | when |
//! |---|---|
//! | `thread.started` | first, once: the thread the turn runs on |
//! | `turn.started` | the turn began |
//! | `item.started` | an item began (its `item` as far as it is known) |
//! | `item.delta` | agent message, reasoning or structured-output text streamed into an item |
//! | `command.output` | a running command printed something |
//! | `item.completed` | an item ended, with its final state |
//! | `turn.completed` | last, when the turn completed or was interrupted |
//! | `turn.failed` | last, when the turn failed |
//!
//! Stored events with no meaning for one headless turn are not printed:
//! `thread_created` (`thread.started` stands for it); the thread's
//! lifecycle and settings (`thread_archived`, `thread_unarchived`,
//! `thread_paused`, `thread_resumed`, `policy_changed` (as `--sandbox` on
//! `--resume` makes), `thread_configured`, `lane_handler_set`); state set
//! through the API (`todos_set`, `input_queued`, `goal_updated`,
//! `goal_cleared`, `plan_stored`, `plan_step_updated`). Nor is the bus's
//! `lagged` notice: exec's feed picks itself up from the store, and the
//! text of deltas missed then is in the completed item.

use std::io::Write;

use gantry_core::{Notification, projection};
use gantry_types as stored;
use serde::Serialize;
use serde_json::Value;

/// One line of `gantry exec --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub(crate) enum Line {
    /// The thread the turn runs on; printed first, by the CLI itself (no `seq`).
    #[serde(rename = "thread.started")]
    ThreadStarted {
        /// The thread's id (what `--resume` and `gantry threads show` take).
        thread_id: String,
        /// True with `--resume`: the thread existed before.
        resumed: bool,
    },
    /// The turn began.
    #[serde(rename = "turn.started")]
    TurnStarted {
        /// The stored event's position in the thread's log.
        seq: u64,
        /// The turn's id.
        turn_id: String,
    },
    /// An item began.
    #[serde(rename = "item.started")]
    ItemStarted {
        /// The stored event's position in the thread's log.
        seq: u64,
        /// The item as it starts.
        item: Item,
    },
    /// Text streamed into an `agent_message`, `reasoning` or
    /// `structured_output` item; the item's `item.completed` carries all of it.
    #[serde(rename = "item.delta")]
    ItemDelta {
        /// The item the text belongs to.
        item_id: String,
        /// The text added.
        text: String,
    },
    /// Output (stdout and stderr together) of a running `command_execution`;
    /// its `item.completed` carries all of it as `aggregated_output`.
    #[serde(rename = "command.output")]
    CommandOutput {
        /// The command's item.
        item_id: String,
        /// The output added (lossily decoded as UTF-8).
        text: String,
    },
    /// An item ended.
    #[serde(rename = "item.completed")]
    ItemCompleted {
        /// The stored event's position in the thread's log.
        seq: u64,
        /// The item's final state.
        item: Item,
    },
    /// The turn ended without failing: the last line when it did.
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        /// The stored event's position in the thread's log.
        seq: u64,
        /// The turn's id.
        turn_id: String,
        /// `completed` or `interrupted`.
        status: TurnStatus,
        /// Model rounds it ran.
        rounds: u32,
        /// Tokens it used.
        usage: Usage,
        /// What they cost in USD; `null` when the model's prices are unknown.
        cost_usd: Option<f64>,
        /// Why it was interrupted; `null` when it completed.
        reason: Option<String>,
    },
    /// The turn failed: the last line when it did (exit code 1).
    #[serde(rename = "turn.failed")]
    TurnFailed {
        /// The stored event's position in the thread's log.
        seq: u64,
        /// The turn's id.
        turn_id: String,
        /// Model rounds it ran.
        rounds: u32,
        /// Tokens it used.
        usage: Usage,
        /// What they cost in USD; `null` when the model's prices are unknown.
        cost_usd: Option<f64>,
        /// Why it failed.
        error: TurnError,
    },
}

impl Line {
    /// The line announcing the thread.
    pub(crate) fn thread_started(thread_id: &stored::ThreadId, resumed: bool) -> Line {
        Line::ThreadStarted {
            thread_id: thread_id.to_string(),
            resumed,
        }
    }

    /// The line for one notification of the turn's feed; `None` for those
    /// not printed (see the module docs).
    pub(crate) fn from_notification(n: &Notification) -> Option<Line> {
        match n {
            Notification::Event(e) => Line::from_event(e),
            Notification::Delta(d) => Some(Line::from_delta(d)),
            Notification::Lagged { .. } => None,
        }
    }

    /// The line for a stored event, if it has one.
    pub(crate) fn from_event(e: &stored::Event) -> Option<Line> {
        use stored::EventPayload as P;
        let seq = e.seq;
        match &e.payload {
            P::TurnStarted { turn } => Some(Line::TurnStarted {
                seq,
                turn_id: turn.id.to_string(),
            }),
            P::ItemStarted { item } => Some(Line::ItemStarted {
                seq,
                item: Item::from(item),
            }),
            P::ItemCompleted { item } => Some(Line::ItemCompleted {
                seq,
                item: Item::from(item),
            }),
            P::TurnCompleted {
                turn_id,
                status,
                rounds,
                usage,
                cost_usd,
                error,
                failure,
            } => {
                let turn_id = turn_id.to_string();
                let usage = Usage::from(usage);
                let cost_usd = known_cost(*cost_usd);
                Some(match status {
                    stored::TurnStatus::Failed => Line::TurnFailed {
                        seq,
                        turn_id,
                        rounds: *rounds,
                        usage,
                        cost_usd,
                        error: TurnError {
                            message: error
                                .clone()
                                .unwrap_or_else(|| "the turn failed".to_owned()),
                            kind: failure.map_or(ErrorKind::Other, ErrorKind::from),
                        },
                    },
                    stored::TurnStatus::Completed => Line::TurnCompleted {
                        seq,
                        turn_id,
                        status: TurnStatus::Completed,
                        rounds: *rounds,
                        usage,
                        cost_usd,
                        reason: None,
                    },
                    // A turn is stored as ended only once it has; `running`
                    // never reaches here, and reads as an interruption if it did.
                    stored::TurnStatus::Interrupted | stored::TurnStatus::Running => {
                        Line::TurnCompleted {
                            seq,
                            turn_id,
                            status: TurnStatus::Interrupted,
                            rounds: *rounds,
                            usage,
                            cost_usd,
                            reason: error.clone(),
                        }
                    }
                })
            }
            P::ThreadCreated { .. }
            | P::ThreadArchived
            | P::ThreadUnarchived
            | P::ThreadPaused
            | P::ThreadResumed
            | P::PolicyChanged { .. }
            | P::ThreadConfigured { .. }
            | P::TodosSet { .. }
            | P::LaneHandlerSet { .. }
            | P::InputQueued { .. }
            | P::GoalUpdated { .. }
            | P::GoalCleared
            | P::PlanStored { .. }
            | P::PlanStepUpdated { .. } => None,
        }
    }

    /// The line for a live delta.
    pub(crate) fn from_delta(d: &stored::Delta) -> Line {
        use stored::DeltaKind as K;
        let item_id = d.item_id.to_string();
        match &d.kind {
            K::CommandOutput(text) => Line::CommandOutput {
                item_id,
                text: text.clone(),
            },
            K::AgentText(text) | K::Reasoning(text) | K::StructuredOutput(text) => {
                Line::ItemDelta {
                    item_id,
                    text: text.clone(),
                }
            }
        }
    }
}

/// Zero means the catalog has no price for the model.
fn known_cost(usd: f64) -> Option<f64> {
    (usd > 0.0).then_some(usd)
}

/// How a turn that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TurnStatus {
    /// The model gave its final answer (exit code 0).
    Completed,
    /// Ctrl-C (or a crash of the process that ran it) stopped it (exit code 130).
    Interrupted,
}

/// Why a turn failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct TurnError {
    /// One line, human-readable.
    pub message: String,
    /// The cause, for scripts that act on it.
    pub kind: ErrorKind,
}

/// The cause of a failed turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ErrorKind {
    /// The model server could not be reached.
    ModelUnreachable,
    /// The model cannot be used as configured (no provider, a missing or
    /// refused key, a misconfigured client).
    ModelUnusable,
    /// The event log could not be saved, so no tool was allowed to run.
    StoreUnavailable,
    /// Anything else: the model failed or refused the request, a limit.
    Other,
}

impl From<stored::TurnFailure> for ErrorKind {
    fn from(f: stored::TurnFailure) -> Self {
        match f {
            stored::TurnFailure::ModelUnreachable => ErrorKind::ModelUnreachable,
            stored::TurnFailure::ModelUnusable => ErrorKind::ModelUnusable,
            stored::TurnFailure::StoreUnavailable => ErrorKind::StoreUnavailable,
            stored::TurnFailure::Other => ErrorKind::Other,
        }
    }
}

/// Tokens used, summed over the turn's model requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Usage {
    /// Prompt tokens, cached and cache-written ones included.
    pub input_tokens: u64,
    /// Prompt tokens served from the provider's cache (part of `input_tokens`).
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the provider's cache (part of `input_tokens`).
    pub cache_write_tokens: u64,
    /// Completion tokens, reasoning ones included.
    pub output_tokens: u64,
    /// Completion tokens spent on reasoning (part of `output_tokens`).
    pub reasoning_tokens: u64,
}

impl From<&stored::Usage> for Usage {
    fn from(u: &stored::Usage) -> Self {
        Usage {
            input_tokens: u.input_tokens,
            cached_input_tokens: u.cached_input_tokens,
            cache_write_tokens: u.cache_write_tokens,
            output_tokens: u.output_tokens,
            reasoning_tokens: u.reasoning_tokens,
        }
    }
}

/// One unit of the turn: `id`, its `type` with that kind's fields, `status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Item {
    /// The item's id; its `item.started`, deltas and `item.completed` share it.
    pub id: String,
    /// The kind (serialized as `type`) and its fields.
    #[serde(flatten)]
    pub details: ItemDetails,
    /// Where the item is.
    pub status: ItemStatus,
}

/// Where an item is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ItemStatus {
    /// Started, not ended (every `item.started`).
    InProgress,
    /// Ended normally (a command with a non-zero exit code included).
    Completed,
    /// Ended with an error (`error` says which, where the kind has one).
    Failed,
    /// Cut short by an interrupt.
    Interrupted,
}

impl From<stored::ItemStatus> for ItemStatus {
    fn from(s: stored::ItemStatus) -> Self {
        match s {
            stored::ItemStatus::InProgress => ItemStatus::InProgress,
            stored::ItemStatus::Completed => ItemStatus::Completed,
            stored::ItemStatus::Failed => ItemStatus::Failed,
            stored::ItemStatus::Interrupted => ItemStatus::Interrupted,
        }
    }
}

/// What an item is, with the fields of its kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ItemDetails {
    /// The user's input (the prompt).
    UserMessage {
        /// What the user said.
        text: String,
    },
    /// Text the agent says; the last one of a completed turn is its final
    /// answer.
    AgentMessage {
        /// The whole text (empty in `item.started`; `item.delta`s stream it).
        text: String,
    },
    /// The model's visible reasoning (a summary, for models that hide it).
    Reasoning {
        /// The whole text (empty in `item.started`; `item.delta`s stream it).
        text: String,
    },
    /// A shell command the agent ran.
    CommandExecution {
        /// The command line, as given to `bash -lc`.
        command: String,
        /// The directory it ran in.
        cwd: String,
        /// Its stdout and stderr together, capped with a truncation marker
        /// (empty in `item.started`; `command.output` streams it).
        aggregated_output: String,
        /// Its exit code; `null` while it runs, or when it was killed by a
        /// signal or never ran.
        exit_code: Option<i32>,
        /// Wall time; `null` until it ended.
        duration_ms: Option<u64>,
        /// Why it did not run or failed (status `failed`); else `null`.
        error: Option<String>,
    },
    /// A file the agent created or edited.
    FileChange {
        /// The path, relative to the workspace.
        path: String,
        /// `add`, `update` or `delete`; `null` while there is no diff (in
        /// `item.started`, or when the change failed).
        change: Option<FileChangeKind>,
        /// Unified diff of the change (empty while there is none).
        diff: String,
        /// Lines the diff adds.
        lines_added: usize,
        /// Lines the diff removes.
        lines_removed: usize,
        /// Why the change failed (status `failed`); else `null`.
        error: Option<String>,
    },
    /// Any other tool call (reading and searching files, MCP tools, ...).
    ToolCall {
        /// The tool's name.
        tool: String,
        /// Its arguments (a JSON string when the model's were not valid JSON).
        arguments: Value,
        /// Its result, on success; else `null`.
        result: Option<String>,
        /// Its error, on failure; else `null`.
        error: Option<String>,
    },
    /// The conversation was compacted: from here on the model sees a
    /// summary instead of what came before.
    ContextCompaction {
        /// `auto` (the context was nearly full), `manual` or `clear`.
        trigger: String,
        /// The model's summary of the earlier conversation (empty when cleared).
        summary: String,
        /// Estimated context tokens before.
        tokens_before: u64,
        /// Estimated context tokens after.
        tokens_after: u64,
    },
    /// A tool call that waits for a human's approval.
    Approval {
        /// Id to answer it with.
        approval_id: String,
        /// The tool asking (`shell`, `write_file`, ...).
        tool: String,
        /// The command line, for shell calls; else `null`.
        command: Option<String>,
        /// Why approval is needed.
        reason: String,
        /// The answer; `null` until given.
        decision: Option<ApprovalDecision>,
        /// Who answered; `null` until answered.
        resolved_by: Option<ResolvedBy>,
    },
    /// A tool call handed to an API client (a thread with an external or
    /// hybrid lane).
    ExternalTask {
        /// Id to complete it with.
        task_id: String,
        /// The tool's name.
        tool: String,
        /// `external` (a client runs it) or `hybrid` (the engine runs it too).
        mode: TaskMode,
        /// The call's arguments.
        arguments: Value,
        /// The result; `null` until given.
        result: Option<String>,
        /// The error, if it failed or timed out; else `null`.
        error: Option<String>,
    },
    /// Output the model submitted against a requested JSON Schema.
    StructuredOutput {
        /// The schema's name, when one was given; else `null`.
        schema_name: Option<String>,
        /// The accepted output (`null` while in progress).
        output: Value,
    },
    /// The agent's task list, replaced as a whole.
    TodoList {
        /// Its tasks, in order.
        items: Vec<Todo>,
    },
    /// Something went wrong in the turn (a model error, a limit).
    Error {
        /// One line, human-readable.
        message: String,
    },
}

/// What a file change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FileChangeKind {
    /// A new file.
    Add,
    /// An existing file changed.
    Update,
    /// A file removed.
    Delete,
}

/// A human's (or a timeout's) answer to an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ApprovalDecision {
    /// Run this call.
    Approve,
    /// Run this call and identical ones for the rest of the session.
    ApproveForSession,
    /// Do not run it.
    Deny,
    /// Do not run it and end the turn.
    Abort,
}

/// Who answered an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ResolvedBy {
    /// A client.
    Client,
    /// Its timeout, by policy.
    Timeout,
    /// An interrupt of the turn.
    Interrupt,
}

/// Who runs an external task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TaskMode {
    /// The engine (not handed out; listed for completeness).
    Internal,
    /// A client.
    External,
    /// The engine, with clients observing.
    Hybrid,
}

/// One task of a `todo_list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Todo {
    /// Stable id, unique in the list.
    pub id: String,
    /// What to do.
    pub text: String,
    /// Where it is.
    pub status: TodoStatus,
    /// How much it matters.
    pub priority: TodoPriority,
}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
    /// Dropped.
    Cancelled,
}

/// How much a task matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TodoPriority {
    /// Do first.
    High,
    /// The default.
    Medium,
    /// When there is time.
    Low,
}

impl From<&stored::Item> for Item {
    fn from(item: &stored::Item) -> Self {
        Item {
            id: item.id.to_string(),
            details: ItemDetails::of(item),
            status: item.status.into(),
        }
    }
}

impl ItemDetails {
    /// The details of a stored item. Left out: provider data sent back to
    /// the model (reasoning signatures), the command's process id, a
    /// compaction's kept user messages, an approval's request details
    /// beyond tool, command and reason, an external task's lane and time
    /// limit, a user message's idempotency key.
    fn of(item: &stored::Item) -> ItemDetails {
        use stored::ItemKind as K;
        // What the model was told when a command or an edit failed.
        let failure = || {
            (item.status == stored::ItemStatus::Failed)
                .then(|| item.tool_call.as_ref().and_then(|c| c.output.clone()))
                .flatten()
        };
        match &item.kind {
            K::UserMessage { text, .. } => ItemDetails::UserMessage { text: text.clone() },
            K::AgentMessage { text } => ItemDetails::AgentMessage { text: text.clone() },
            K::Reasoning { text, .. } => ItemDetails::Reasoning { text: text.clone() },
            K::CommandExecution {
                command,
                cwd,
                output,
                exit_code,
                duration_ms,
                ..
            } => ItemDetails::CommandExecution {
                command: command.clone(),
                cwd: cwd.clone(),
                aggregated_output: output.clone(),
                exit_code: *exit_code,
                duration_ms: *duration_ms,
                error: failure(),
            },
            K::FileChange { path, diff } => {
                let stat = projection::diff_stat(diff);
                ItemDetails::FileChange {
                    path: path.clone(),
                    change: stat.kind.map(FileChangeKind::from),
                    diff: diff.clone(),
                    lines_added: stat.added,
                    lines_removed: stat.removed,
                    error: failure(),
                }
            }
            K::ToolCall {
                name,
                arguments,
                result,
                error,
            } => ItemDetails::ToolCall {
                tool: name.clone(),
                arguments: arguments.clone(),
                result: result.clone(),
                error: error.clone(),
            },
            K::ContextCompaction {
                summary,
                tokens_before,
                tokens_after,
                trigger,
                ..
            } => ItemDetails::ContextCompaction {
                trigger: trigger.clone(),
                summary: summary.clone(),
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
            },
            K::Approval {
                approval_id,
                request,
                decision,
                resolved_by,
            } => ItemDetails::Approval {
                approval_id: approval_id.clone(),
                tool: request.tool.clone(),
                command: request.command.clone(),
                reason: request.reason.clone(),
                decision: decision.as_ref().map(|d| d.kind().into()),
                resolved_by: resolved_by.map(ResolvedBy::from),
            },
            K::ExternalTask {
                task_id,
                tool,
                mode,
                payload,
                result,
                error,
                ..
            } => ItemDetails::ExternalTask {
                task_id: task_id.clone(),
                tool: tool.clone(),
                mode: (*mode).into(),
                arguments: payload.clone(),
                result: result.clone(),
                error: error.clone(),
            },
            K::StructuredOutput {
                schema_name,
                payload,
            } => ItemDetails::StructuredOutput {
                schema_name: schema_name.clone(),
                output: payload.clone(),
            },
            K::TodoList { todos } => ItemDetails::TodoList {
                items: todos.iter().map(Todo::from).collect(),
            },
            K::Error { message } => ItemDetails::Error {
                message: message.clone(),
            },
        }
    }
}

impl From<projection::FileChangeKind> for FileChangeKind {
    fn from(kind: projection::FileChangeKind) -> Self {
        match kind {
            projection::FileChangeKind::Add => Self::Add,
            projection::FileChangeKind::Update => Self::Update,
            projection::FileChangeKind::Delete => Self::Delete,
        }
    }
}

impl From<stored::ApprovalDecisionKind> for ApprovalDecision {
    fn from(d: stored::ApprovalDecisionKind) -> Self {
        match d {
            stored::ApprovalDecisionKind::Approve => ApprovalDecision::Approve,
            stored::ApprovalDecisionKind::ApproveForSession => ApprovalDecision::ApproveForSession,
            stored::ApprovalDecisionKind::Deny => ApprovalDecision::Deny,
            stored::ApprovalDecisionKind::Abort => ApprovalDecision::Abort,
        }
    }
}

impl From<stored::ResolvedBy> for ResolvedBy {
    fn from(r: stored::ResolvedBy) -> Self {
        match r {
            stored::ResolvedBy::Client => ResolvedBy::Client,
            stored::ResolvedBy::Timeout => ResolvedBy::Timeout,
            stored::ResolvedBy::Interrupt => ResolvedBy::Interrupt,
        }
    }
}

impl From<stored::HandlerMode> for TaskMode {
    fn from(m: stored::HandlerMode) -> Self {
        match m {
            stored::HandlerMode::Internal => TaskMode::Internal,
            stored::HandlerMode::External => TaskMode::External,
            stored::HandlerMode::Hybrid => TaskMode::Hybrid,
        }
    }
}

impl From<&stored::TodoItem> for Todo {
    fn from(t: &stored::TodoItem) -> Self {
        Todo {
            id: t.id.clone(),
            text: t.content.clone(),
            status: match t.status {
                stored::TodoStatus::Pending => TodoStatus::Pending,
                stored::TodoStatus::InProgress => TodoStatus::InProgress,
                stored::TodoStatus::Completed => TodoStatus::Completed,
                stored::TodoStatus::Cancelled => TodoStatus::Cancelled,
            },
            priority: match t.priority {
                stored::TodoPriority::High => TodoPriority::High,
                stored::TodoPriority::Medium => TodoPriority::Medium,
                stored::TodoPriority::Low => TodoPriority::Low,
            },
        }
    }
}

/// Prints one line on stdout. A closed stdout (e.g. `| head`) must not kill
/// the turn, so write errors are ignored.
pub(crate) fn print(line: &Line) {
    if let Ok(text) = serde_json::to_string(line) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use stored::{ItemId, ItemKind, TurnId};

    fn item(kind: ItemKind, status: stored::ItemStatus) -> stored::Item {
        stored::Item {
            id: ItemId::from("i1"),
            turn_id: TurnId::from("t1"),
            round: 1,
            status,
            started_at: 1,
            completed_at: None,
            kind,
            tool_call: None,
        }
    }

    fn shown(i: &stored::Item) -> Value {
        serde_json::to_value(Item::from(i)).unwrap()
    }

    #[test]
    fn every_item_kind_keeps_its_type_name() {
        let kinds = [
            ItemKind::UserMessage {
                text: "hi".into(),
                key: Some("k".into()),
            },
            ItemKind::AgentMessage { text: "a".into() },
            ItemKind::Reasoning {
                text: "r".into(),
                signature: Some("sig".into()),
                opaque: None,
            },
            ItemKind::CommandExecution {
                command: "ls".into(),
                cwd: "/w".into(),
                process_id: Some(7),
                output: String::new(),
                exit_code: None,
                duration_ms: None,
            },
            ItemKind::FileChange {
                path: "a".into(),
                diff: String::new(),
            },
            ItemKind::ToolCall {
                name: "grep".into(),
                arguments: json!({"pattern": "x"}),
                result: None,
                error: None,
            },
            ItemKind::ContextCompaction {
                summary: String::new(),
                kept_user_messages: vec![],
                tokens_before: 10,
                tokens_after: 2,
                trigger: "clear".into(),
            },
            ItemKind::Error {
                message: "m".into(),
            },
            ItemKind::StructuredOutput {
                schema_name: None,
                payload: Value::Null,
            },
            ItemKind::TodoList { todos: vec![] },
        ];
        for kind in kinds {
            let name = kind.name();
            let v = shown(&item(kind, stored::ItemStatus::InProgress));
            assert_eq!(v["type"], name);
            assert_eq!(v["id"], "i1");
            assert_eq!(v["status"], "in_progress");
            assert!(v.get("signature").is_none() && v.get("key").is_none());
        }
    }

    #[test]
    fn a_failed_edit_says_why_and_a_new_file_is_an_add() {
        let mut failed = item(
            ItemKind::FileChange {
                path: "a.txt".into(),
                diff: String::new(),
            },
            stored::ItemStatus::Failed,
        );
        failed.tool_call = Some(stored::ToolCallOrigin {
            call_id: "c".into(),
            name: "edit_file".into(),
            arguments: "{}".into(),
            output: Some("old_string not found".into()),
            refused: None,
        });
        assert_eq!(
            shown(&failed),
            json!({"id": "i1", "type": "file_change", "path": "a.txt", "change": null,
                   "diff": "", "lines_added": 0, "lines_removed": 0,
                   "error": "old_string not found", "status": "failed"})
        );
    }

    #[test]
    fn only_turn_output_is_printed() {
        let event = |payload| stored::Event {
            thread_id: stored::ThreadId::from("th"),
            seq: 3,
            ts: 0,
            turn_id: None,
            item_id: None,
            payload,
            cursor: 0,
        };
        assert_eq!(
            Line::from_event(&event(stored::EventPayload::ThreadPaused)),
            None
        );
        let failed = Line::from_event(&event(stored::EventPayload::TurnCompleted {
            turn_id: TurnId::from("t1"),
            status: stored::TurnStatus::Failed,
            rounds: 2,
            usage: stored::Usage::default(),
            cost_usd: 0.0,
            error: Some("no".into()),
            failure: Some(stored::TurnFailure::ModelUnreachable),
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_value(failed).unwrap(),
            json!({"type": "turn.failed", "seq": 3, "turn_id": "t1", "rounds": 2,
                   "usage": {"input_tokens": 0, "cached_input_tokens": 0,
                             "cache_write_tokens": 0, "output_tokens": 0,
                             "reasoning_tokens": 0},
                   "cost_usd": null,
                   "error": {"message": "no", "kind": "model_unreachable"}})
        );
        let interrupted = Line::from_event(&event(stored::EventPayload::TurnCompleted {
            turn_id: TurnId::from("t1"),
            status: stored::TurnStatus::Interrupted,
            rounds: 1,
            usage: stored::Usage::default(),
            cost_usd: 0.25,
            error: Some("interrupted".into()),
            failure: None,
        }))
        .unwrap();
        let v = serde_json::to_value(interrupted).unwrap();
        assert_eq!(v["type"], "turn.completed");
        assert_eq!(v["status"], "interrupted");
        assert_eq!(v["reason"], "interrupted");
        assert_eq!(v["cost_usd"], 0.25);
    }
}

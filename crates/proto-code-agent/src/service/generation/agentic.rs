//! The newer A3S proto's server-side agentic loop (`AgenticGenerate`,
//! `StreamAgenticGenerate`) and delegation to sub-agents (`Delegate`,
//! `StreamDelegate`). The loop is the engine's turn: a step is one model
//! round (its text and tool calls) and the tool results it got back. A
//! delegation is a sub-agent thread: a new session in the parent's
//! workspace, with the parent's model, the agent's instructions and
//! tools, whose turn streams back to the caller.

use std::collections::HashMap;

use gantry_core::{CreateThread, IfBusy, UserInput};
use gantry_types::{PermissionRules, RuleDecision, ThreadId, TurnFailure, TurnStatus, Usage};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use super::chunks::{TurnFeed, Update, pb_usage};
use super::input::ready_session;
use crate::pb;
use crate::service::RpcStream;
use crate::state::Ctx;
use crate::status::{required, status, turn_failed};

/// Steps when the request names no limit (A3S's default).
const DEFAULT_MAX_STEPS: u32 = 50;
/// Events buffered between the loop and a slow client.
const STREAM_BUFFER: usize = 256;

/// `AgenticGenerate`: runs the agent loop on `prompt` to its end: the final
/// text, every step, every tool call with its result, the usage and why it
/// stopped (`stop`, `max_steps`, `cancelled`). A failed turn is a status
/// (`UNAVAILABLE` when the model server cannot be reached).
pub(crate) async fn agentic_generate(
    ctx: &Ctx,
    req: pb::AgenticGenerateRequest,
    trace_parent: Option<String>,
) -> Result<pb::AgenticGenerateResponse, Status> {
    let prompt = required("prompt", &req.prompt)?.to_owned();
    let (id, feed) = start(ctx, &req.session_id, prompt, trace_parent).await?;
    let done = run(ctx, &id, feed, max_steps(req.max_steps), Loop::new(&id)).await?;
    Ok(pb::AgenticGenerateResponse {
        session_id: id.to_string(),
        text: done.text,
        steps: done.steps,
        tool_calls: done.tool_calls,
        usage: Some(pb_usage(&done.usage)),
        finish_reason: done.finish_reason.to_owned(),
        plan: None,
    })
}

/// `StreamAgenticGenerate`: the loop as it happens: `text`, `tool_call`,
/// `tool_result`, `confirmation_required` / `confirmation_received`,
/// `external_task_pending` / `external_task_completed`, `step_finish` after
/// each step, then `done` (or `error` then `done` for a failed turn). A
/// client that goes away interrupts the turn.
pub(crate) async fn stream_agentic_generate(
    ctx: &Ctx,
    req: pb::AgenticGenerateRequest,
    trace_parent: Option<String>,
) -> Result<RpcStream<pb::AgenticGenerateEvent>, Status> {
    let prompt = required("prompt", &req.prompt)?.to_owned();
    let (id, feed) = start(ctx, &req.session_id, prompt, trace_parent).await?;
    let state = Loop::new(&id);
    Ok(stream(
        ctx,
        id,
        feed,
        max_steps(req.max_steps),
        state,
        Vec::new(),
    ))
}

/// `Delegate`: runs `task` in a sub-agent under its parent's policy
/// (`explore` and `plan` read only, `general` with every tool the parent
/// may use; `allowed_tools` narrows either) and returns
/// its answer with `agent_session_id`, the sub-agent's session.
pub(crate) async fn delegate(
    ctx: &Ctx,
    req: pb::DelegateRequest,
    trace_parent: Option<String>,
) -> Result<pb::DelegateResponse, Status> {
    let (child, feed) = start_subagent(ctx, &req, trace_parent).await?;
    let state = Loop::new(&parent_id(&req)?);
    let done = run(ctx, &child, feed, max_steps(req.max_steps), state).await?;
    Ok(pb::DelegateResponse {
        session_id: req.session_id.trim().to_owned(),
        agent_session_id: child.to_string(),
        text: done.text,
        steps: done.steps,
        tool_calls: done.tool_calls,
        usage: Some(pb_usage(&done.usage)),
        finish_reason: done.finish_reason.to_owned(),
    })
}

/// `StreamDelegate`: `subagent_start` (the sub-agent's session), the
/// sub-agent's loop as `StreamAgenticGenerate` streams it, `subagent_end`
/// with its answer, then `done`.
pub(crate) async fn stream_delegate(
    ctx: &Ctx,
    req: pb::DelegateRequest,
    trace_parent: Option<String>,
) -> Result<RpcStream<pb::AgenticGenerateEvent>, Status> {
    let (child, feed) = start_subagent(ctx, &req, trace_parent).await?;
    let state = Loop {
        subagent: Some((req.agent_name.trim().to_owned(), child.to_string())),
        ..Loop::new(&parent_id(&req)?)
    };
    let first = vec![pb::AgenticGenerateEvent {
        agent_name: Some(req.agent_name.trim().to_owned()),
        agent_task: Some(req.task.clone()),
        agent_session_id: Some(child.to_string()),
        ..state.event("subagent_start")
    }];
    Ok(stream(
        ctx,
        child,
        feed,
        max_steps(req.max_steps),
        state,
        first,
    ))
}

fn max_steps(asked: u32) -> u32 {
    if asked == 0 { DEFAULT_MAX_STEPS } else { asked }
}

fn parent_id(req: &pb::DelegateRequest) -> Result<ThreadId, Status> {
    crate::status::session_id(&req.session_id)
}

/// Starts a turn of `prompt` on the session, keeping the caller's
/// `traceparent`; the feed that follows it.
async fn start(
    ctx: &Ctx,
    session: &str,
    prompt: String,
    trace_parent: Option<String>,
) -> Result<(ThreadId, TurnFeed), Status> {
    let (id, from) = ready_session(ctx, session).await?;
    let feed = ctx.engine.feeds().follow(&id, from).await.map_err(status)?;
    let input = UserInput {
        text: prompt,
        trace_parent,
        ..UserInput::default()
    };
    let turn = ctx
        .engine
        .turns()
        .send_input(&id, input, IfBusy::Reject)
        .await
        .map_err(status)?;
    Ok((id, TurnFeed::new(turn, feed)))
}

/// Creates the sub-agent's session and starts its turn on the task; the
/// turn keeps the caller's `traceparent`, so the sub-agent's work is in the
/// caller's trace.
async fn start_subagent(
    ctx: &Ctx,
    req: &pb::DelegateRequest,
    trace_parent: Option<String>,
) -> Result<(ThreadId, TurnFeed), Status> {
    let parent = ctx.live_session(&parent_id(req)?).await?;
    let task = required("task", &req.task)?.to_owned();
    let name = required("agent_name", &req.agent_name)?;
    let agent = Agent::named(name)?;
    let allowed: Vec<String> = req
        .allowed_tools
        .iter()
        .map(|t| crate::names::engine(t).to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    let thread = &parent.thread;
    let mut metadata = std::collections::BTreeMap::new();
    metadata.insert("a3s.parent_session".to_owned(), thread.id.to_string());
    metadata.insert("a3s.agent".to_owned(), name.to_owned());
    let child = ctx
        .engine
        .threads()
        .create(CreateThread {
            cwd: thread.cwd.clone().into(),
            model: Some(thread.model.clone()),
            endpoint: thread.endpoint.clone(),
            temperature: thread.temperature,
            max_output_tokens: thread.max_output_tokens,
            instructions: Some(agent.instructions.to_owned()),
            name: Some(format!("delegate-{name}")),
            metadata,
            ..CreateThread::default()
        })
        .await
        .map_err(status)?;
    let tools: Vec<String> = match (agent.tools, allowed.is_empty()) {
        (Some(read_only), true) => read_only.iter().map(|t| (*t).to_owned()).collect(),
        (Some(read_only), false) => allowed
            .into_iter()
            .filter(|t| read_only.contains(&t.as_str()))
            .collect(),
        (None, false) => allowed,
        (None, true) => Vec::new(),
    };
    // The parent's policy (confirmations, lanes, rules), narrowed to the
    // agent's tools when it has a list: every other call is denied, and
    // what the parent denies or asks about still is.
    let mut policy = thread.policy.clone();
    if agent.tools.is_some() || !tools.is_empty() {
        let parent = &thread.policy.permissions;
        let inherited = |rules: &Vec<String>| {
            if parent.enabled {
                rules.clone()
            } else {
                Vec::new()
            }
        };
        policy.permissions = PermissionRules {
            enabled: true,
            allow: tools,
            deny: inherited(&parent.deny),
            ask: inherited(&parent.ask),
            default: RuleDecision::Deny,
        };
    }
    ctx.engine
        .safety()
        .set_policy(&child.id, policy)
        .await
        .map_err(status)?;
    start(ctx, &child.id.to_string(), task, trace_parent).await
}

/// A built-in sub-agent.
struct Agent {
    instructions: &'static str,
    /// The only tools it may call; `None`: every tool.
    tools: Option<&'static [&'static str]>,
}

/// What the read-only agents may call.
const READ_ONLY: &[&str] = &["read_file", "list_dir", "glob", "grep"];

impl Agent {
    /// A3S's built-in agents; `NOT_FOUND` for others, as A3S answers.
    fn named(name: &str) -> Result<Agent, Status> {
        match name {
            "explore" => Ok(Agent {
                instructions: "You are an exploration sub-agent. Read, search and list files to \
                    answer the task; change nothing. End with a concise report of what you found.",
                tools: Some(READ_ONLY),
            }),
            "plan" => Ok(Agent {
                instructions: "You are a planning sub-agent. Read the code the task concerns and \
                    answer with a step-by-step plan; change nothing.",
                tools: Some(READ_ONLY),
            }),
            "general" => Ok(Agent {
                instructions: "You are a general-purpose sub-agent. Carry out the task and end \
                    with a concise report of what you did.",
                tools: None,
            }),
            other => Err(Status::not_found(format!(
                "Agent '{}' not found; built-in agents: explore, plan, general",
                gantry_grpc::clip(other)
            ))),
        }
    }
}

/// Runs the loop on its own task, streaming its events; a client that
/// goes away interrupts the turn.
fn stream(
    ctx: &Ctx,
    id: ThreadId,
    feed: TurnFeed,
    max_steps: u32,
    state: Loop,
    first: Vec<pb::AgenticGenerateEvent>,
) -> RpcStream<pb::AgenticGenerateEvent> {
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let engine = ctx.engine.clone();
    tokio::spawn(async move {
        for event in first {
            if tx.send(Ok(event)).await.is_err() {
                let _ = engine.turns().interrupt(&id).await;
                return;
            }
        }
        match run_on(&engine, &id, feed, max_steps, state, Some(&tx)).await {
            Ok(_) => {}
            Err(Stop::ClientGone) => {
                let _ = engine.turns().interrupt(&id).await;
            }
            Err(Stop::Failed(status)) => {
                let _ = tx.send(Err(status)).await;
            }
        }
    });
    Box::pin(ReceiverStream::new(rx))
}

/// Runs the loop to its end, collecting what it did.
async fn run(
    ctx: &Ctx,
    id: &ThreadId,
    feed: TurnFeed,
    max_steps: u32,
    state: Loop,
) -> Result<Done, Status> {
    run_on(&ctx.engine, id, feed, max_steps, state, None)
        .await
        .map_err(|stop| match stop {
            Stop::Failed(status) => status,
            Stop::ClientGone => Status::cancelled("the client went away"),
        })
}

/// Why a loop stopped without its answer.
enum Stop {
    /// The streaming client went away.
    ClientGone,
    /// The turn failed: its status.
    Failed(Status),
}

/// Follows the turn; each event goes to `tx` when streaming. Past
/// `max_steps` the turn is interrupted and ends as `max_steps`.
async fn run_on(
    engine: &gantry_core::Engine,
    id: &ThreadId,
    mut feed: TurnFeed,
    max_steps: u32,
    mut state: Loop,
    tx: Option<&mpsc::Sender<Result<pb::AgenticGenerateEvent, Status>>>,
) -> Result<Done, Stop> {
    loop {
        let updates = feed.next().await;
        if updates.is_empty() {
            return Err(Stop::Failed(Status::internal(
                "the turn's events ended early",
            )));
        }
        for update in updates {
            let (events, end) = state.on(update);
            if let Some(tx) = tx {
                for event in events {
                    tx.send(Ok(event)).await.map_err(|_| Stop::ClientGone)?;
                }
            }
            if let Some(end) = end {
                return end.map_err(Stop::Failed);
            }
            if state.step > max_steps && !state.over_budget {
                state.over_budget = true;
                let _ = engine.turns().interrupt(id).await;
            }
        }
    }
}

/// What a finished loop did.
struct Done {
    text: String,
    steps: Vec<pb::AgenticStep>,
    tool_calls: Vec<pb::ToolCall>,
    usage: Usage,
    finish_reason: &'static str,
}

/// The loop's state as its updates arrive.
struct Loop {
    /// The session events are reported for (the parent of a sub-agent).
    session_id: String,
    /// Set for a delegation: (agent name, its session).
    subagent: Option<(String, String)>,
    /// The step under way, from 1: the turn's model round.
    step: u32,
    /// The current step.
    current: pb::AgenticStep,
    steps: Vec<pb::AgenticStep>,
    tool_calls: Vec<pb::ToolCall>,
    /// Set once the loop passed its step budget and was interrupted.
    over_budget: bool,
}

impl Loop {
    fn new(session: &ThreadId) -> Self {
        Loop {
            session_id: session.to_string(),
            subagent: None,
            step: 1,
            current: pb::AgenticStep {
                step_index: 1,
                ..Default::default()
            },
            steps: Vec::new(),
            tool_calls: Vec::new(),
            over_budget: false,
        }
    }

    /// An event of `kind` for the session.
    fn event(&self, kind: &str) -> pb::AgenticGenerateEvent {
        pb::AgenticGenerateEvent {
            r#type: kind.to_owned(),
            session_id: self.session_id.clone(),
            ..Default::default()
        }
    }

    /// Closes the current step: its `step_finish` event.
    fn finish_step(&mut self, reason: &str) -> pb::AgenticGenerateEvent {
        let mut step = std::mem::take(&mut self.current);
        step.step_index = self.step;
        step.finish_reason = reason.to_owned();
        let event = pb::AgenticGenerateEvent {
            step_index: Some(self.step),
            step_text: Some(step.text.clone()),
            ..self.event("step_finish")
        };
        self.steps.push(step);
        self.step += 1;
        self.current.step_index = self.step;
        event
    }

    /// The events of one update, and the loop's end when it ended.
    fn on(
        &mut self,
        update: Update,
    ) -> (Vec<pb::AgenticGenerateEvent>, Option<Result<Done, Status>>) {
        let mut out = Vec::new();
        match update {
            Update::Round(round) => {
                while self.step < round {
                    out.push(self.finish_step("tool_calls"));
                }
            }
            Update::Text(text) => {
                self.current.text.push_str(&text);
                out.push(pb::AgenticGenerateEvent {
                    content: Some(text),
                    ..self.event("text")
                });
            }
            Update::ToolStarted(call) => {
                self.current.tool_calls.push(call.clone());
                out.push(pb::AgenticGenerateEvent {
                    tool_call: Some(call),
                    ..self.event("tool_call")
                });
            }
            Update::ToolFinished(call) => {
                let result = call.result.clone().unwrap_or_default();
                self.current.tool_results.push(result.clone());
                out.push(pb::AgenticGenerateEvent {
                    tool_call_id: Some(call.id.clone()),
                    tool_result: Some(result),
                    ..self.event("tool_result")
                });
                self.tool_calls.push(call);
            }
            Update::Note(note) => out.extend(self.note(note)),
            Update::Ended {
                status,
                usage,
                error,
                failure,
            } => return self.ended(out, status, usage, error, failure),
        }
        (out, None)
    }

    /// A note of the turn as its event, if A3S has one for it.
    fn note(&self, note: HashMap<String, String>) -> Option<pb::AgenticGenerateEvent> {
        let get = |k: &str| note.get(k).cloned();
        let event = match note.get("event").map(String::as_str) {
            Some("confirmation_required") => pb::AgenticGenerateEvent {
                confirmation_id: get("tool_id"),
                tool_name: get("tool_name"),
                tool_args: get("args"),
                timeout_ms: get("timeout_ms").and_then(|t| t.parse().ok()),
                ..self.event("confirmation_required")
            },
            Some("confirmation_received") => pb::AgenticGenerateEvent {
                confirmation_id: get("tool_id"),
                approved: get("approved").map(|a| a == "true"),
                ..self.event("confirmation_received")
            },
            Some(kind @ ("external_task_pending" | "external_task_completed")) => {
                pb::AgenticGenerateEvent {
                    external_task: Some(pb::ExternalTask {
                        task_id: get("task_id").unwrap_or_default(),
                        session_id: self.session_id.clone(),
                        command_type: get("command_type").unwrap_or_default(),
                        payload: get("payload").unwrap_or_default(),
                        timeout_ms: get("timeout_ms").and_then(|t| t.parse().ok()).unwrap_or(0),
                        ..Default::default()
                    }),
                    ..self.event(kind)
                }
            }
            _ => return None,
        };
        Some(event)
    }

    /// The end of the loop: the last step, `subagent_end` for a
    /// delegation, `error` for a failed turn, then `done`.
    fn ended(
        &mut self,
        mut out: Vec<pb::AgenticGenerateEvent>,
        status: TurnStatus,
        usage: Usage,
        error: Option<String>,
        failure: Option<TurnFailure>,
    ) -> (Vec<pb::AgenticGenerateEvent>, Option<Result<Done, Status>>) {
        let finish_reason = match status {
            TurnStatus::Completed => "stop",
            TurnStatus::Interrupted if self.over_budget => "max_steps",
            TurnStatus::Interrupted => "cancelled",
            TurnStatus::Failed | TurnStatus::Running => "error",
        };
        let mut last = self.finish_step(finish_reason);
        last.usage = Some(pb_usage(&usage));
        out.push(last);
        let text = self
            .steps
            .last()
            .map(|s| s.text.clone())
            .unwrap_or_default();
        if let Some((name, session)) = &self.subagent {
            out.push(pb::AgenticGenerateEvent {
                agent_name: Some(name.clone()),
                agent_session_id: Some(session.clone()),
                agent_result: Some(text.clone()),
                ..self.event("subagent_end")
            });
        }
        if finish_reason == "error" {
            let message = error
                .clone()
                .unwrap_or_else(|| "the turn failed".to_owned());
            out.push(pb::AgenticGenerateEvent {
                error_message: Some(message.clone()),
                recoverable: Some(false),
                ..self.event("error")
            });
            out.push(pb::AgenticGenerateEvent {
                finish_reason: Some(finish_reason.to_owned()),
                usage: Some(pb_usage(&usage)),
                ..self.event("done")
            });
            return (out, Some(Err(turn_failed(failure, &message))));
        }
        out.push(pb::AgenticGenerateEvent {
            content: Some(text.clone()),
            finish_reason: Some(finish_reason.to_owned()),
            usage: Some(pb_usage(&usage)),
            ..self.event("done")
        });
        let done = Done {
            text,
            steps: std::mem::take(&mut self.steps),
            tool_calls: std::mem::take(&mut self.tool_calls),
            usage,
            finish_reason,
        };
        (out, Some(Ok(done)))
    }
}

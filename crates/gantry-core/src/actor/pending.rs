//! Requests a turn waits on that clients answer: approvals, external tasks
//! and questions to the user. The actor is the one arbiter, so the first
//! answer wins, whether it comes from a client, a timeout or an interrupt.

use std::collections::HashMap;
use std::time::Instant;

use gantry_types::{
    ApprovalDecision, Lane, ResolvedBy, ThreadView, TimeoutAction, UserInputAnswer,
    UserInputQuestion,
};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::EngineError;

/// How a pending request was resolved.
#[derive(Debug)]
pub(crate) enum Resolution {
    /// An approval's answer, and who gave it.
    Approval {
        decision: ApprovalDecision,
        by: gantry_types::ResolvedBy,
    },
    /// An external task's result or error.
    Task(Result<String, String>),
    /// A user-input request's answers (`None`: nobody gave any), and who
    /// resolved it.
    UserInput {
        answers: Option<Vec<UserInputAnswer>>,
        by: ResolvedBy,
    },
}

/// What a turn registers while it waits.
#[derive(Debug)]
pub(crate) enum Waiting {
    Approval {
        timeout_ms: u64,
        on_timeout: TimeoutAction,
    },
    Task(ExternalTaskInfo),
    /// Questions to the user; an answer is checked against them.
    UserInput {
        questions: Vec<UserInputQuestion>,
    },
}

/// An external task waiting for a client, as listed to clients.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExternalTaskInfo {
    /// Id to complete it with.
    pub task_id: String,
    /// The call's lane.
    pub lane: Lane,
    /// Gantry tool name.
    pub tool: String,
    /// The call's arguments.
    pub payload: Value,
    /// The time limit it was given.
    pub timeout_ms: u64,
    /// Time left before it fails.
    pub remaining_ms: u64,
    #[serde(skip)]
    pub(crate) started: Option<Instant>,
}

struct Entry {
    waiting: Waiting,
    reply: oneshot::Sender<Resolution>,
}

/// The actor's table of pending requests.
#[derive(Default)]
pub(crate) struct Pending {
    entries: HashMap<String, Entry>,
}

impl Pending {
    /// Whether nothing waits for an answer.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn register(
        &mut self,
        id: String,
        waiting: Waiting,
        reply: oneshot::Sender<Resolution>,
    ) {
        self.entries.insert(id, Entry { waiting, reply });
    }

    /// A client's answer. Errors say why it does not apply; a user-input
    /// request that is not pending is told apart by `view` (unknown, or
    /// already resolved), and its answers are checked before they count.
    pub(crate) fn answer(
        &mut self,
        id: &str,
        resolution: Resolution,
        view: &ThreadView,
    ) -> Result<(), EngineError> {
        let Some(entry) = self.entries.get(id) else {
            if matches!(resolution, Resolution::UserInput { .. }) {
                return Err(not_pending_user_input(id, view));
            }
            return Err(EngineError::InvalidInput(format!(
                "`{id}` is not pending: it was already resolved, or never existed"
            )));
        };
        let resolution = match (&entry.waiting, resolution) {
            (Waiting::Approval { .. }, r @ Resolution::Approval { .. })
            | (Waiting::Task(_), r @ Resolution::Task(_)) => r,
            (Waiting::UserInput { questions }, Resolution::UserInput { answers, by }) => {
                let answers = answers
                    .map(|a| crate::user_input::check_answers(questions, a))
                    .transpose()
                    .map_err(EngineError::InvalidInput)?;
                Resolution::UserInput { answers, by }
            }
            _ => {
                return Err(EngineError::InvalidInput(format!(
                    "`{id}` is {}, not what this answer is for",
                    match entry.waiting {
                        Waiting::Approval { .. } => "an approval",
                        Waiting::Task(_) => "an external task",
                        Waiting::UserInput { .. } => "a user-input request",
                    }
                )));
            }
        };
        if let Some(entry) = self.entries.remove(id) {
            let _ = entry.reply.send(resolution);
        }
        Ok(())
    }

    /// The turn's timer ran out: resolve by policy, unless already answered.
    pub(crate) fn expire(&mut self, id: &str) {
        let Some(entry) = self.entries.remove(id) else {
            return;
        };
        let resolution = match entry.waiting {
            Waiting::Approval {
                timeout_ms,
                on_timeout,
            } => Resolution::Approval {
                decision: match on_timeout {
                    TimeoutAction::AutoApprove => ApprovalDecision::Approve,
                    TimeoutAction::Reject => ApprovalDecision::Deny {
                        reason: Some(format!(
                            "no answer within {}; rejected by the confirmation policy",
                            secs(timeout_ms)
                        )),
                    },
                },
                by: ResolvedBy::Timeout,
            },
            Waiting::Task(info) => Resolution::Task(Err(format!(
                "external task {} ({}) was not completed within {}",
                info.task_id,
                info.tool,
                secs(info.timeout_ms)
            ))),
            Waiting::UserInput { .. } => Resolution::UserInput {
                answers: None,
                by: ResolvedBy::Timeout,
            },
        };
        let _ = entry.reply.send(resolution);
    }

    /// An interrupt: approvals are aborted, tasks fail.
    pub(crate) fn abort_all(&mut self) {
        for (_, entry) in self.entries.drain() {
            let resolution = match entry.waiting {
                Waiting::Approval { .. } => Resolution::Approval {
                    decision: ApprovalDecision::Abort,
                    by: ResolvedBy::Interrupt,
                },
                Waiting::Task(_) => Resolution::Task(Err("interrupted".to_owned())),
                Waiting::UserInput { .. } => Resolution::UserInput {
                    answers: None,
                    by: ResolvedBy::Interrupt,
                },
            };
            let _ = entry.reply.send(resolution);
        }
    }

    /// External tasks still waiting, with their time left.
    pub(crate) fn tasks(&self) -> Vec<ExternalTaskInfo> {
        let mut tasks: Vec<ExternalTaskInfo> = self
            .entries
            .values()
            .filter_map(|e| match &e.waiting {
                Waiting::Task(info) => {
                    let mut info = info.clone();
                    let elapsed = info.started.map_or(0, |s| s.elapsed().as_millis() as u64);
                    info.remaining_ms = info.timeout_ms.saturating_sub(elapsed);
                    Some(info)
                }
                Waiting::Approval { .. } | Waiting::UserInput { .. } => None,
            })
            .collect();
        tasks.sort_by(|a, b| a.task_id.cmp(&b.task_id));
        tasks
    }
}

/// Why an answer to user-input request `id` finds nothing pending: the
/// thread never asked it, or it ended (answered, timed out, interrupted,
/// or closed by a restart).
fn not_pending_user_input(id: &str, view: &ThreadView) -> EngineError {
    match crate::projection::user_inputs(view).find(|r| r.request_id == id) {
        Some(request) => EngineError::AlreadyResolved {
            what: "user input request",
            id: id.to_owned(),
            how: request.state.describe(),
        },
        None => EngineError::NotFound {
            what: "user input request",
            name: id.to_owned(),
        },
    }
}

/// `1.5 s`, `30 s`.
fn secs(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

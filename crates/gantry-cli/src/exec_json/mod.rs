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

mod item;

use item::Item;

use gantry_core::Notification;
use gantry_types as stored;
use serde::Serialize;

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
            | P::PlanStepUpdated { .. }
            // The item's start and end say it all; usage comes with the turn's end.
            | P::ItemUpdated { .. }
            | P::ModelResponded { .. }
            // A checkpoint is for rewinding; `exec` prints the turn, not its undo.
            | P::CheckpointRecorded { .. } => None,
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
    /// The model refused to answer.
    ModelRefused,
    /// Anything else: the model failed, a limit.
    Other,
}

impl From<stored::TurnFailure> for ErrorKind {
    fn from(f: stored::TurnFailure) -> Self {
        match f {
            stored::TurnFailure::ModelUnreachable => ErrorKind::ModelUnreachable,
            stored::TurnFailure::ModelUnusable => ErrorKind::ModelUnusable,
            stored::TurnFailure::StoreUnavailable => ErrorKind::StoreUnavailable,
            stored::TurnFailure::ModelRefused => ErrorKind::ModelRefused,
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
mod tests;

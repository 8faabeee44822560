//! Events: every state change of a thread, and the live deltas between them.

use serde::{Deserialize, Serialize};

use crate::{
    CheckpointRecord, ExecutionPlan, Item, ItemId, LaneHandler, PlanStepStatus, QueuedInput,
    Thread, ThreadGoal, ThreadId, ThreadPolicy, ThreadSettings, TodoItem, Turn, TurnFailure,
    TurnId, TurnStatus, Usage,
};

/// A durable state change. `seq` is dense and increasing per thread, from 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The thread it belongs to.
    pub thread_id: ThreadId,
    /// Position in the thread's log, from 1, without gaps.
    pub seq: u64,
    /// When it happened, unix milliseconds.
    pub ts: i64,
    /// The turn it concerns, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// The item it concerns, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<ItemId>,
    /// What happened.
    pub payload: EventPayload,
    /// Position in the order events were committed, across all threads,
    /// from 1 without gaps: what an all-threads feed resumes from. Given
    /// by the store when the event is committed (0 before).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cursor: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// When one model request ran and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelCall {
    /// When it was sent, unix milliseconds.
    pub started_at: i64,
    /// When its first token (text, reasoning or a tool call) arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_at: Option<i64>,
    /// When its stream ended (before its items were closed and recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<i64>,
    /// The provider's finish reason (`stop`, `tool_calls`, ...), if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The provider's id of the answer (`chatcmpl-...`, `msg_...`), if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The model that answered, as the provider names it, if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
}

/// What a durable event says happened.
// Events travel behind an `Arc` once built, so the size of the largest
// variant (a thread's metadata) costs one allocation, not copies.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventPayload {
    /// The thread came to be (also the first event of a fork).
    ThreadCreated {
        /// Its initial metadata.
        thread: Thread,
    },
    /// The thread was archived.
    ThreadArchived,
    /// The thread was unarchived.
    ThreadUnarchived,
    /// Work on the thread was paused: no model or tool call starts until resumed.
    ThreadPaused,
    /// Work on the thread was resumed.
    ThreadResumed,
    /// The thread's policy was replaced (it applies from the next tool call).
    PolicyChanged {
        /// The new policy.
        policy: ThreadPolicy,
    },
    /// The thread's settings (name, model, instructions, model server,
    /// sampling) were changed; they apply from the next model request.
    ThreadConfigured {
        /// All of its settings, as they are now.
        settings: ThreadSettings,
    },
    /// The task list was replaced through the API.
    TodosSet {
        /// The whole new list.
        todos: Vec<TodoItem>,
    },
    /// A lane's handler was set.
    LaneHandlerSet {
        /// The lane and its handler.
        handler: LaneHandler,
    },
    /// A user input was queued behind the running turn.
    InputQueued {
        /// The queued input.
        input: QueuedInput,
    },
    /// A turn started.
    TurnStarted {
        /// Its initial metadata.
        turn: Turn,
    },
    /// A turn ended.
    TurnCompleted {
        /// Which turn.
        turn_id: TurnId,
        /// How it ended.
        status: TurnStatus,
        /// Model rounds it ran.
        rounds: u32,
        /// Tokens it used.
        usage: Usage,
        /// What they cost in USD (0 when the model's price is unknown).
        #[serde(default)]
        cost_usd: f64,
        /// Why it failed or was interrupted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Why it failed, when it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure: Option<TurnFailure>,
    },
    /// An item started.
    ItemStarted {
        /// Its initial state.
        item: Item,
    },
    /// An item in progress changed before it ended: a command's process
    /// started (its `process_id` is known from here on). Carries the whole
    /// item as it is now, without the deltas streamed so far.
    ItemUpdated {
        /// Its state now.
        item: Item,
    },
    /// An item finished; carries its final state, deltas folded in.
    ItemCompleted {
        /// Its final state.
        item: Item,
    },
    /// One response of the model ended (a round of the turn, or the
    /// summary a compaction asked for), with the tokens the provider said
    /// it used. Only responses whose provider reported usage have one, so
    /// a turn's events may sum to less than its `TurnCompleted` usage.
    ModelResponded {
        /// The turn it belongs to.
        turn_id: TurnId,
        /// The turn's model round it answered (a compaction's is the round
        /// it ran before).
        round: u32,
        /// What this one response used.
        usage: Usage,
        /// The model's context window in tokens, when the catalog knows it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
        /// When the request ran and how it ended (traces' `chat` spans);
        /// `None` in logs of releases that did not record it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<ModelCall>,
    },
    /// The workspace's state was recorded before the turn's first tool
    /// that can change it ran: what a rewind or a fork goes back to.
    CheckpointRecorded {
        /// The turn it was taken in.
        turn_id: TurnId,
        /// The checkpoint.
        checkpoint: CheckpointRecord,
    },
    /// The thread goal was set or changed (status, budget, usage).
    GoalUpdated {
        /// Its new state.
        goal: ThreadGoal,
    },
    /// The thread goal was removed.
    GoalCleared,
    /// A plan was stored on the thread.
    PlanStored {
        /// The plan, with its id.
        plan: ExecutionPlan,
    },
    /// A plan step changed status.
    PlanStepUpdated {
        /// The plan.
        plan_id: String,
        /// The step.
        step_id: String,
        /// Its new status.
        status: PlanStepStatus,
    },
}

impl EventPayload {
    /// The snake_case name of the event, as serialized in `type`.
    pub fn name(&self) -> &'static str {
        match self {
            EventPayload::ThreadCreated { .. } => "thread_created",
            EventPayload::ThreadArchived => "thread_archived",
            EventPayload::ThreadUnarchived => "thread_unarchived",
            EventPayload::ThreadPaused => "thread_paused",
            EventPayload::ThreadResumed => "thread_resumed",
            EventPayload::PolicyChanged { .. } => "policy_changed",
            EventPayload::ThreadConfigured { .. } => "thread_configured",
            EventPayload::LaneHandlerSet { .. } => "lane_handler_set",
            EventPayload::TodosSet { .. } => "todos_set",
            EventPayload::InputQueued { .. } => "input_queued",
            EventPayload::TurnStarted { .. } => "turn_started",
            EventPayload::TurnCompleted { .. } => "turn_completed",
            EventPayload::ItemStarted { .. } => "item_started",
            EventPayload::ItemUpdated { .. } => "item_updated",
            EventPayload::ItemCompleted { .. } => "item_completed",
            EventPayload::ModelResponded { .. } => "model_responded",
            EventPayload::CheckpointRecorded { .. } => "checkpoint_recorded",
            EventPayload::GoalUpdated { .. } => "goal_updated",
            EventPayload::GoalCleared => "goal_cleared",
            EventPayload::PlanStored { .. } => "plan_stored",
            EventPayload::PlanStepUpdated { .. } => "plan_step_updated",
        }
    }

    /// The turn and item this payload concerns.
    pub fn subject(&self) -> (Option<&TurnId>, Option<&ItemId>) {
        match self {
            EventPayload::TurnStarted { turn } => (Some(&turn.id), None),
            EventPayload::TurnCompleted { turn_id, .. } => (Some(turn_id), None),
            EventPayload::ItemStarted { item }
            | EventPayload::ItemUpdated { item }
            | EventPayload::ItemCompleted { item } => (Some(&item.turn_id), Some(&item.id)),
            EventPayload::ModelResponded { turn_id, .. }
            | EventPayload::CheckpointRecorded { turn_id, .. } => (Some(turn_id), None),
            EventPayload::InputQueued { input } => (Some(&input.turn_id), None),
            _ => (None, None),
        }
    }
}

/// A piece of streaming output, broadcast live and never stored: the completed
/// item carries the sum of its deltas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    /// The thread.
    pub thread_id: ThreadId,
    /// The turn.
    pub turn_id: TurnId,
    /// The item the delta extends.
    pub item_id: ItemId,
    /// Seq of the last durable event before this delta.
    pub after_seq: u64,
    /// What was added.
    #[serde(flatten)]
    pub kind: DeltaKind,
}

/// The kinds of streaming output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "delta", content = "text", rename_all = "snake_case")]
pub enum DeltaKind {
    /// Agent message text.
    AgentText(String),
    /// Reasoning text.
    Reasoning(String),
    /// Command output (stdout and stderr, lossily decoded as UTF-8).
    CommandOutput(String),
    /// Structured output JSON as it arrives (possibly partial).
    StructuredOutput(String),
}

impl DeltaKind {
    /// The text carried.
    pub fn text(&self) -> &str {
        match self {
            DeltaKind::AgentText(t)
            | DeltaKind::Reasoning(t)
            | DeltaKind::CommandOutput(t)
            | DeltaKind::StructuredOutput(t) => t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_call_reads_without_who_answered_and_writes_it_only_when_known() {
        // As logs written before the response fields were recorded hold it.
        let old = r#"{"started_at":1,"ended_at":2,"finish_reason":"stop"}"#;
        let call: ModelCall = serde_json::from_str(old).unwrap();
        assert_eq!(
            (call.response_id.as_deref(), call.response_model.as_deref()),
            (None, None)
        );
        assert_eq!(serde_json::to_string(&call).unwrap(), old);
        let named = ModelCall {
            response_id: Some("chatcmpl-1".into()),
            response_model: Some("gpt-4.1-2025-04-14".into()),
            ..call
        };
        let json = serde_json::to_value(&named).unwrap();
        assert_eq!(json["response_id"], "chatcmpl-1");
        assert_eq!(json["response_model"], "gpt-4.1-2025-04-14");
        assert_eq!(serde_json::from_value::<ModelCall>(json).unwrap(), named);
    }
}

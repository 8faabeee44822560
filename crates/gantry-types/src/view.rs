//! The fold of a thread's events: its full readable state.

use serde::{Deserialize, Serialize};

use crate::{
    CheckpointRecord, Event, EventPayload, ExecutionPlan, Item, ItemKind, ItemStatus, QueuedInput,
    Thread, ThreadStatus, Turn, TurnStatus,
};

/// A turn with its items, in the order they started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnView {
    /// The turn.
    #[serde(flatten)]
    pub turn: Turn,
    /// Its items.
    pub items: Vec<Item>,
    /// The workspace's state before the turn first changed it, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointRecord>,
}

/// A thread with its turns and queued inputs: what `read` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadView {
    /// The thread's metadata.
    pub thread: Thread,
    /// Its turns, oldest first.
    pub turns: Vec<TurnView>,
    /// Inputs waiting for the running turn to end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queued: Vec<QueuedInput>,
    /// Plans stored on the thread, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plans: Vec<ExecutionPlan>,
}

impl ThreadView {
    /// Builds a view from a thread's log; `None` if the log does not start
    /// with `thread_created`.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Option<Self> {
        let mut events = events.into_iter();
        let first = events.next()?;
        let EventPayload::ThreadCreated { thread } = &first.payload else {
            return None;
        };
        let mut view = ThreadView {
            thread: thread.clone(),
            turns: Vec::new(),
            queued: Vec::new(),
            plans: Vec::new(),
        };
        view.thread.last_seq = first.seq;
        for event in events {
            view.apply(event);
        }
        Some(view)
    }

    /// The running turn, if any.
    pub fn running_turn(&self) -> Option<&TurnView> {
        self.turns
            .last()
            .filter(|t| t.turn.status == TurnStatus::Running)
    }

    /// Applies one event. Events for unknown turns or items are ignored, so a
    /// fold never fails on a log written by another version.
    pub fn apply(&mut self, event: &Event) {
        let thread = &mut self.thread;
        thread.last_seq = event.seq;
        thread.updated_at = event.ts;
        match &event.payload {
            EventPayload::ThreadCreated { .. } => {}
            EventPayload::GoalUpdated { goal } => thread.goal = Some(goal.clone()),
            EventPayload::GoalCleared => thread.goal = None,
            EventPayload::PlanStored { plan } => {
                // Storing a plan again under its id replaces it.
                self.plans.retain(|p| p.id != plan.id);
                self.plans.push(plan.clone());
            }
            EventPayload::PlanStepUpdated {
                plan_id,
                step_id,
                status,
            } => {
                let step = self
                    .plans
                    .iter_mut()
                    .find(|p| &p.id == plan_id)
                    .and_then(|p| {
                        p.updated_at = event.ts;
                        p.steps.iter_mut().find(|s| &s.id == step_id)
                    });
                if let Some(step) = step {
                    step.status = *status;
                }
            }
            EventPayload::ThreadArchived => thread.archived = true,
            EventPayload::ThreadUnarchived => thread.archived = false,
            EventPayload::ThreadPaused => thread.paused = true,
            EventPayload::ThreadResumed => thread.paused = false,
            EventPayload::PolicyChanged { policy } => thread.policy = policy.clone(),
            EventPayload::ThreadConfigured { settings } => thread.apply_settings(settings),
            EventPayload::TodosSet { todos } => thread.todos.clone_from(todos),
            EventPayload::LaneHandlerSet { handler } => {
                thread.lane_handlers.retain(|h| h.lane != handler.lane);
                thread.lane_handlers.push(*handler);
            }
            EventPayload::InputQueued { input } => self.queued.push(input.clone()),
            EventPayload::TurnStarted { turn } => {
                self.queued.retain(|q| q.turn_id != turn.id);
                if thread.preview.is_empty() {
                    thread.preview = preview_of(&turn.input);
                }
                thread.status = ThreadStatus::Running;
                self.turns.push(TurnView {
                    turn: turn.clone(),
                    items: Vec::new(),
                    checkpoint: None,
                });
            }
            EventPayload::TurnCompleted {
                turn_id,
                status,
                rounds,
                usage,
                cost_usd,
                error,
                failure,
            } => {
                thread.status = match status {
                    TurnStatus::Failed => ThreadStatus::Failed,
                    _ => ThreadStatus::Idle,
                };
                thread.usage.add(usage);
                thread.cost_usd += cost_usd;
                if let Some(tv) = self.turns.iter_mut().rev().find(|t| &t.turn.id == turn_id) {
                    tv.turn.status = *status;
                    tv.turn.rounds = *rounds;
                    tv.turn.usage = *usage;
                    tv.turn.cost_usd = *cost_usd;
                    tv.turn.error = error.clone();
                    tv.turn.failure = *failure;
                    tv.turn.completed_at = Some(event.ts);
                }
            }
            EventPayload::ModelResponded { turn_id, usage, .. } => {
                // A running turn's usage grows with each response; its end
                // says the whole (compactions and all).
                if let Some(tv) = self
                    .turns
                    .iter_mut()
                    .rev()
                    .find(|t| &t.turn.id == turn_id && t.turn.status == TurnStatus::Running)
                {
                    tv.turn.usage.add(usage);
                }
            }
            EventPayload::CheckpointRecorded {
                turn_id,
                checkpoint,
            } => {
                if let Some(tv) = self.turns.iter_mut().rev().find(|t| &t.turn.id == turn_id) {
                    tv.checkpoint = Some(checkpoint.clone());
                }
            }
            EventPayload::ItemStarted { item }
            | EventPayload::ItemUpdated { item }
            | EventPayload::ItemCompleted { item } => {
                // A completed `todo_write` replaces the list.
                if let (EventPayload::ItemCompleted { .. }, ItemKind::TodoList { todos }) =
                    (&event.payload, &item.kind)
                    && item.status == ItemStatus::Completed
                {
                    thread.todos.clone_from(todos);
                }
                let Some(tv) = self
                    .turns
                    .iter_mut()
                    .rev()
                    .find(|t| t.turn.id == item.turn_id)
                else {
                    return;
                };
                match tv.items.iter_mut().rev().find(|i| i.id == item.id) {
                    Some(existing) => *existing = item.clone(),
                    None => tv.items.push(item.clone()),
                }
                tv.turn.rounds = tv.turn.rounds.max(item.round);
            }
        }
    }
}

/// The first line of a text, cut to 80 characters.
fn preview_of(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    match line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ItemKind, ItemStatus, ThreadId, TurnId, Usage};

    fn ev(seq: u64, payload: EventPayload) -> Event {
        Event {
            thread_id: ThreadId::from("t"),
            seq,
            ts: seq as i64,
            turn_id: None,
            item_id: None,
            payload,
            cursor: 0,
        }
    }

    #[test]
    fn fold_builds_turns_items_and_usage() {
        let thread = Thread {
            id: ThreadId::from("t"),
            name: None,
            cwd: "/w".into(),
            model: "m".into(),
            reasoning: None,
            instructions: None,
            endpoint: None,
            temperature: None,
            max_output_tokens: None,
            metadata: Default::default(),
            status: ThreadStatus::Idle,
            archived: false,
            preview: String::new(),
            created_at: 0,
            updated_at: 0,
            forked_from: None,
            agent_id: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            paused: false,
            policy: Default::default(),
            lane_handlers: Vec::new(),
            todos: Vec::new(),
            goal: None,
            last_seq: 0,
        };
        let turn_id = TurnId::from("u");
        let turn = Turn {
            id: turn_id.clone(),
            thread_id: thread.id.clone(),
            input: "fix the build\nplease".into(),
            key: None,
            status: TurnStatus::Running,
            started_at: 2,
            completed_at: None,
            rounds: 0,
            usage: Usage::default(),
            cost_usd: 0.0,
            error: None,
            failure: None,
            model: None,
            trace_parent: None,
        };
        let mut item = Item {
            id: "i".into(),
            turn_id: turn_id.clone(),
            round: 1,
            status: ItemStatus::InProgress,
            started_at: 3,
            completed_at: None,
            kind: ItemKind::AgentMessage {
                text: String::new(),
            },
            tool_call: None,
        };
        let mut events = vec![
            ev(1, EventPayload::ThreadCreated { thread }),
            ev(2, EventPayload::TurnStarted { turn }),
            ev(3, EventPayload::ItemStarted { item: item.clone() }),
        ];
        item.status = ItemStatus::Completed;
        item.kind = ItemKind::AgentMessage {
            text: "done".into(),
        };
        events.push(ev(4, EventPayload::ItemCompleted { item }));
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        };
        events.push(ev(
            5,
            EventPayload::TurnCompleted {
                turn_id,
                status: TurnStatus::Completed,
                rounds: 1,
                usage,
                cost_usd: 0.5,
                error: None,
                failure: None,
            },
        ));

        let view = ThreadView::from_events(&events).expect("starts with thread_created");
        assert_eq!(view.thread.preview, "fix the build");
        assert_eq!(view.thread.last_seq, 5);
        assert_eq!(view.thread.status, ThreadStatus::Idle);
        assert_eq!(view.thread.usage.total(), 15);
        assert_eq!(view.thread.cost_usd, 0.5);
        assert_eq!(view.turns.len(), 1);
        assert_eq!(
            view.turns[0].items.len(),
            1,
            "started+completed is one item"
        );
        assert_eq!(
            view.turns[0].items[0].kind,
            ItemKind::AgentMessage {
                text: "done".into()
            }
        );
        assert_eq!(view.turns[0].turn.duration_ms(), Some(3));
    }

    #[test]
    fn item_kind_serializes_with_type_tag() {
        let json = serde_json::to_value(ItemKind::Error {
            message: "x".into(),
        })
        .unwrap();
        assert_eq!(json, serde_json::json!({"type": "error", "message": "x"}));
    }
}

//! Engine events as the runner's updates: each thread the runner serves is
//! followed from its event log, and every turn and item change becomes a
//! `TurnUpdate` or `ItemUpdate` echoing the request id of the message that
//! caused it (the idempotency key the message was sent with).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use gantry_core::{Engine, Notification, ThreadFeed};
use gantry_runner_protocol::pb;
use gantry_runner_protocol::pb::client_message::Payload;
use gantry_types::{
    EventPayload, Item, ItemKind, ItemStatus, ThreadId, ThreadView, TurnId, TurnStatus,
};

use super::outbox::Outbox;

/// A `TurnUpdate` for `turn`.
pub(crate) fn turn_update(
    request_id: Option<String>,
    turn: &TurnId,
    status: pb::TurnStatus,
) -> pb::ClientMessage {
    pb::ClientMessage {
        request_id,
        payload: Some(Payload::TurnUpdate(pb::TurnUpdate {
            sdk_turn_id: turn.to_string(),
            status: status as i32,
        })),
    }
}

/// The `ItemUpdate` for an item, or `None` for an item the protocol has no
/// use for (the runner's own bookkeeping, such as todo lists).
pub(crate) fn item_update(item: &Item, request_id: Option<String>) -> Option<pb::ClientMessage> {
    let status = match item.status {
        ItemStatus::InProgress => pb::ItemStatus::Running,
        _ => pb::ItemStatus::Completed,
    };
    let (item_type, text, command) = match &item.kind {
        ItemKind::UserMessage { text, .. } => (pb::ItemType::UserMessage, Some(text.clone()), None),
        ItemKind::AgentMessage { text } => (pb::ItemType::AgentMessage, Some(text.clone()), None),
        ItemKind::Reasoning { text, .. } => (pb::ItemType::Reasoning, Some(text.clone()), None),
        ItemKind::CommandExecution {
            command,
            cwd,
            process_id,
            output,
            ..
        } => (
            pb::ItemType::CommandExecution,
            None,
            Some(pb::CommandExecutionItem {
                command: command.clone(),
                cwd: cwd.clone(),
                // The pid is known once the process spawned; the item id
                // stands in before (the field must not be empty).
                process_id: process_id.map_or_else(|| item.id.to_string(), |p| p.to_string()),
                output: (!output.is_empty()).then(|| output.clone()),
            }),
        ),
        ItemKind::TodoList { .. } => return None,
        // 0.2.0 has no type for the rest: they travel as unknown items with
        // a one-line summary, so a control plane still sees errors, file
        // changes and tool calls.
        other => (pb::ItemType::Unknown, Some(summary(other)), None),
    };
    Some(pb::ClientMessage {
        request_id,
        payload: Some(Payload::ItemUpdate(pb::ItemUpdate {
            sdk_item_id: item.id.to_string(),
            status: status as i32,
            item_type: item_type as i32,
            text,
            command_execution_item: command,
        })),
    })
}

/// One line on an item the protocol has no type for.
fn summary(kind: &ItemKind) -> String {
    match kind {
        ItemKind::Error { message } => format!("error: {message}"),
        ItemKind::FileChange { path, .. } => format!("file_change: {path}"),
        ItemKind::ToolCall { name, .. } => format!("tool_call: {name}"),
        other => other.name().to_owned(),
    }
}

/// The updates that say where a thread's last turn stands: its items, then
/// the turn.
fn last_turn(view: &ThreadView) -> Vec<pb::ClientMessage> {
    let Some(last) = view.turns.last() else {
        return Vec::new();
    };
    let turn = &last.turn;
    let mut messages: Vec<_> = last
        .items
        .iter()
        .filter_map(|item| {
            let key = match &item.kind {
                ItemKind::UserMessage { key: Some(key), .. } => Some(key.clone()),
                _ => turn.key.clone(),
            };
            item_update(item, key)
        })
        .collect();
    let status = if turn.status == TurnStatus::Running {
        pb::TurnStatus::Running
    } else {
        pb::TurnStatus::Completed
    };
    messages.push(turn_update(turn.key.clone(), &turn.id, status));
    messages
}

/// The threads being followed, so each is followed once.
#[derive(Clone, Default)]
pub(crate) struct Followers {
    threads: Arc<Mutex<HashSet<ThreadId>>>,
}

impl Followers {
    /// Follows `thread` from the event after the current end of its log,
    /// unless it is followed already. Returns once the subscription exists,
    /// so a message sent afterwards is seen.
    pub(crate) async fn ensure(&self, engine: &Engine, thread: &ThreadId, outbox: &Outbox) {
        self.follow(engine, thread, outbox, false).await;
    }

    /// Like [`Followers::ensure`], first saying again where the thread's
    /// last turn ended: for a thread from an earlier run, whose last updates
    /// may have been queued when that run stopped, or whose running turn the
    /// restart closed as interrupted.
    pub(crate) async fn resume(&self, engine: &Engine, thread: &ThreadId, outbox: &Outbox) {
        self.follow(engine, thread, outbox, true).await;
    }

    async fn follow(&self, engine: &Engine, thread: &ThreadId, outbox: &Outbox, restate: bool) {
        {
            let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
            if !threads.insert(thread.clone()) {
                return;
            }
        }
        let view = match engine.threads().read(thread).await {
            Ok(view) => view,
            Err(e) => {
                tracing::warn!(thread = %thread, error = %e, "cannot follow a thread");
                self.forget(thread);
                return;
            }
        };
        match engine
            .feeds()
            .follow(thread, view.thread.last_seq + 1)
            .await
        {
            Ok(feed) => {
                if restate {
                    for message in last_turn(&view) {
                        if outbox.send(message).await.is_err() {
                            return;
                        }
                    }
                }
                let follower = Follower {
                    engine: engine.clone(),
                    thread: thread.clone(),
                    outbox: outbox.clone(),
                    keys: HashMap::new(),
                };
                tokio::spawn(follower.run(feed));
            }
            Err(e) => {
                tracing::warn!(thread = %thread, error = %e, "cannot follow a thread");
                self.forget(thread);
            }
        }
    }

    fn forget(&self, thread: &ThreadId) {
        let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        threads.remove(thread);
    }
}

/// Turns one thread's events into updates until the engine stops.
struct Follower {
    engine: Engine,
    thread: ThreadId,
    outbox: Outbox,
    /// The key (request id) of each turn seen, by turn.
    keys: HashMap<TurnId, Option<String>>,
}

impl Follower {
    async fn run(mut self, mut feed: ThreadFeed) {
        loop {
            let event = match feed.next().await {
                Ok(Some(Notification::Event(event))) => event,
                Ok(Some(_)) => continue,
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(thread = %self.thread, error = %e, "stopped following a thread");
                    return;
                }
            };
            if let Some(message) = self.update_for(&event.payload).await
                && self.outbox.send(message).await.is_err()
            {
                return;
            }
        }
    }

    async fn update_for(&mut self, payload: &EventPayload) -> Option<pb::ClientMessage> {
        match payload {
            EventPayload::TurnStarted { turn } => {
                self.keys.insert(turn.id.clone(), turn.key.clone());
                Some(turn_update(
                    turn.key.clone(),
                    &turn.id,
                    pb::TurnStatus::Running,
                ))
            }
            EventPayload::TurnCompleted { turn_id, .. } => {
                let key = self.key_of(turn_id).await;
                Some(turn_update(key, turn_id, pb::TurnStatus::Completed))
            }
            EventPayload::ItemStarted { item } | EventPayload::ItemCompleted { item } => {
                // A steered message answers its own request.
                let key = match &item.kind {
                    ItemKind::UserMessage { key: Some(key), .. } => Some(key.clone()),
                    _ => self.key_of(&item.turn_id).await,
                };
                item_update(item, key)
            }
            _ => None,
        }
    }

    /// The key of a turn that started before this follower did is in the log.
    async fn key_of(&mut self, turn: &TurnId) -> Option<String> {
        if let Some(key) = self.keys.get(turn) {
            return key.clone();
        }
        let key = self
            .engine
            .threads()
            .read(&self.thread)
            .await
            .ok()
            .and_then(|view| {
                view.turns
                    .iter()
                    .find(|t| &t.turn.id == turn)
                    .and_then(|t| t.turn.key.clone())
            });
        self.keys.insert(turn.clone(), key.clone());
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_types::ItemId;

    fn item(kind: ItemKind, status: ItemStatus) -> Item {
        Item {
            id: ItemId::from("item-1"),
            turn_id: TurnId::from("turn-1"),
            round: 1,
            status,
            started_at: 0,
            completed_at: None,
            kind,
            tool_call: None,
        }
    }

    fn update(message: pb::ClientMessage) -> pb::ItemUpdate {
        match message.payload {
            Some(Payload::ItemUpdate(u)) => u,
            other => panic!("not an item update: {other:?}"),
        }
    }

    #[test]
    fn a_command_carries_its_command_cwd_pid_and_output() {
        let kind = ItemKind::CommandExecution {
            command: "ls".into(),
            cwd: "/w".into(),
            process_id: Some(42),
            output: "a\nb\n".into(),
            exit_code: Some(0),
            duration_ms: Some(3),
        };
        let msg = item_update(&item(kind, ItemStatus::Completed), Some("r".into())).unwrap();
        assert_eq!(msg.request_id.as_deref(), Some("r"));
        let u = update(msg);
        assert_eq!(u.status, pb::ItemStatus::Completed as i32);
        assert_eq!(u.item_type, pb::ItemType::CommandExecution as i32);
        let c = u.command_execution_item.unwrap();
        assert_eq!(
            (c.command.as_str(), c.cwd.as_str(), c.process_id.as_str()),
            ("ls", "/w", "42")
        );
        assert_eq!(c.output.as_deref(), Some("a\nb\n"));
    }

    #[test]
    fn a_command_not_yet_spawned_still_has_a_process_id() {
        let kind = ItemKind::CommandExecution {
            command: "ls".into(),
            cwd: "/w".into(),
            process_id: None,
            output: String::new(),
            exit_code: None,
            duration_ms: None,
        };
        let u = update(item_update(&item(kind, ItemStatus::InProgress), None).unwrap());
        assert_eq!(u.status, pb::ItemStatus::Running as i32);
        let c = u.command_execution_item.unwrap();
        assert_eq!(c.process_id, "item-1");
        assert_eq!(c.output, None);
    }

    #[test]
    fn items_without_a_type_travel_as_unknown_with_a_summary() {
        let kind = ItemKind::Error {
            message: "model unreachable".into(),
        };
        let u = update(item_update(&item(kind, ItemStatus::Completed), None).unwrap());
        assert_eq!(u.item_type, pb::ItemType::Unknown as i32);
        assert_eq!(u.text.as_deref(), Some("error: model unreachable"));
        let todos = ItemKind::TodoList { todos: Vec::new() };
        assert!(item_update(&item(todos, ItemStatus::Completed), None).is_none());
    }
}

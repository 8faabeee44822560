//! Engine events as the runner's updates: each thread the runner serves is
//! followed from its event log, and every turn and item change becomes a
//! turn or item update naming its thread and turn and echoing the request
//! id of the message that caused it (the idempotency key the message was
//! sent with). In 0.7 the thread's name and each turn's token usage are
//! reported too.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use gantry_core::{Engine, Notification, ThreadFeed};
use gantry_runner_protocol::ProtocolVersion;
use gantry_runner_protocol::messages::{
    ClientMessage, CommandExecutionItem, ItemStatus as WireItemStatus, ItemType, ItemUpdate,
    Payload, ThreadTokenUsageUpdate, TokenUsageBreakdown, TurnStatus as WireTurnStatus, TurnUpdate,
};
use gantry_types::{
    EventPayload, Item, ItemKind, ItemStatus, ThreadId, ThreadView, TurnId, TurnStatus, Usage,
};

use super::outbox::Outbox;

/// A turn update for `turn` of `thread`.
pub(crate) fn turn_update(
    request_id: Option<String>,
    thread: &ThreadId,
    turn: &TurnId,
    status: WireTurnStatus,
) -> ClientMessage {
    ClientMessage {
        request_id,
        payload: Payload::Turn(TurnUpdate {
            sdk_turn_id: turn.to_string(),
            status,
            thread_id: Some(thread.to_string()),
        }),
    }
}

/// The item update for an item of `thread`, or `None` for an item the
/// version has no use for (0.2.0 has no plan: todo lists stay the runner's).
pub(crate) fn item_update(
    item: &Item,
    thread: &ThreadId,
    request_id: Option<String>,
    version: ProtocolVersion,
) -> Option<ClientMessage> {
    let status = match item.status {
        ItemStatus::InProgress => WireItemStatus::Running,
        _ => WireItemStatus::Completed,
    };
    let (item_type, text, command) = match &item.kind {
        ItemKind::UserMessage { text, .. } => (ItemType::UserMessage, Some(text.clone()), None),
        ItemKind::AgentMessage { text } => (ItemType::AgentMessage, Some(text.clone()), None),
        ItemKind::Reasoning { text, .. } => (ItemType::Reasoning, Some(text.clone()), None),
        ItemKind::CommandExecution {
            command,
            cwd,
            process_id,
            output,
            ..
        } => (
            ItemType::CommandExecution,
            None,
            Some(CommandExecutionItem {
                command: command.clone(),
                cwd: cwd.clone(),
                // The pid is known once the process spawned; the item id
                // stands in before (the field must not be empty).
                process_id: process_id.map_or_else(|| item.id.to_string(), |p| p.to_string()),
                output: (!output.is_empty()).then(|| output.clone()),
            }),
        ),
        ItemKind::TodoList { todos } => match version {
            ProtocolVersion::V0_2 => return None,
            ProtocolVersion::V0_7 => {
                let lines: Vec<String> = todos
                    .iter()
                    .map(|t| {
                        let status = format!("{:?}", t.status).to_lowercase();
                        format!("[{status}] {}", t.content)
                    })
                    .collect();
                (ItemType::Plan, Some(lines.join("\n")), None)
            }
        },
        ItemKind::FileChange { .. } => (ItemType::FileChange, Some(summary(&item.kind)), None),
        ItemKind::ToolCall { name, .. } if name.starts_with("mcp__") => {
            (ItemType::McpToolCall, Some(summary(&item.kind)), None)
        }
        ItemKind::ContextCompaction { .. } => {
            (ItemType::ContextCompaction, Some(summary(&item.kind)), None)
        }
        // No type of either version for the rest: they travel as unknown
        // items with a one-line summary, so a control plane still sees
        // errors and tool calls. (0.2.0 sends its types past the first
        // five as unknown too, the summary saying which.)
        other => (ItemType::Unknown, Some(summary(other)), None),
    };
    Some(ClientMessage {
        request_id,
        payload: Payload::Item(ItemUpdate {
            sdk_item_id: item.id.to_string(),
            status,
            item_type,
            text,
            command_execution_item: command,
            thread_id: Some(thread.to_string()),
            sdk_turn_id: Some(item.turn_id.to_string()),
        }),
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
fn last_turn(view: &ThreadView, version: ProtocolVersion) -> Vec<ClientMessage> {
    let Some(last) = view.turns.last() else {
        return Vec::new();
    };
    let thread = &view.thread.id;
    let turn = &last.turn;
    let mut messages: Vec<_> = last
        .items
        .iter()
        .filter_map(|item| {
            let key = match &item.kind {
                ItemKind::UserMessage { key: Some(key), .. } => Some(key.clone()),
                _ => turn.key.clone(),
            };
            item_update(item, thread, key, version)
        })
        .collect();
    let status = if turn.status == TurnStatus::Running {
        WireTurnStatus::Running
    } else {
        WireTurnStatus::Completed
    };
    messages.push(turn_update(turn.key.clone(), thread, &turn.id, status));
    messages
}

/// The threads being followed, so each is followed once.
#[derive(Clone)]
pub(crate) struct Followers {
    threads: Arc<Mutex<HashSet<ThreadId>>>,
    version: ProtocolVersion,
}

impl Followers {
    /// Followers reporting in `version`.
    pub(crate) fn new(version: ProtocolVersion) -> Self {
        Self {
            threads: Arc::default(),
            version,
        }
    }

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
                    for message in last_turn(&view, self.version) {
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
                    version: self.version,
                    name: view.thread.name.clone(),
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
    version: ProtocolVersion,
    /// The thread's name as last reported.
    name: Option<String>,
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
            for message in self.updates_for(&event.payload).await {
                if self.outbox.send(message).await.is_err() {
                    return;
                }
            }
        }
    }

    async fn updates_for(&mut self, payload: &EventPayload) -> Vec<ClientMessage> {
        let thread = &self.thread.clone();
        match payload {
            EventPayload::TurnStarted { turn } => {
                self.keys.insert(turn.id.clone(), turn.key.clone());
                vec![turn_update(
                    turn.key.clone(),
                    thread,
                    &turn.id,
                    WireTurnStatus::Running,
                )]
            }
            EventPayload::TurnCompleted { turn_id, usage, .. } => {
                let key = self.key_of(turn_id).await;
                let mut updates = Vec::new();
                // Usage first: a control plane seeing the turn end has its numbers.
                if self.version == ProtocolVersion::V0_7 {
                    updates.push(self.token_usage(turn_id, usage).await);
                }
                updates.push(turn_update(key, thread, turn_id, WireTurnStatus::Completed));
                updates
            }
            EventPayload::ItemStarted { item } | EventPayload::ItemCompleted { item } => {
                // A steered message answers its own request.
                let key = match &item.kind {
                    ItemKind::UserMessage { key: Some(key), .. } => Some(key.clone()),
                    _ => self.key_of(&item.turn_id).await,
                };
                item_update(item, thread, key, self.version)
                    .into_iter()
                    .collect()
            }
            EventPayload::ThreadConfigured { settings }
                if self.version == ProtocolVersion::V0_7 && settings.name != self.name =>
            {
                self.name.clone_from(&settings.name);
                vec![ClientMessage {
                    request_id: None,
                    payload: Payload::ThreadName {
                        thread_id: thread.to_string(),
                        thread_name: settings.name.clone(),
                    },
                }]
            }
            _ => Vec::new(),
        }
    }

    /// The thread's usage so far and the turn's, as a token usage update.
    async fn token_usage(&self, turn: &TurnId, last: &Usage) -> ClientMessage {
        let mut total = Usage::default();
        let mut window = None;
        if let Ok(view) = self.engine.threads().read(&self.thread).await {
            for t in &view.turns {
                // The turn just ended may not be in the view yet.
                if &t.turn.id != turn {
                    total.add(&t.turn.usage);
                }
            }
            window = self
                .engine
                .providers()
                .model_info(&view.thread.model)
                .and_then(|info| i64::try_from(info.limit.context).ok())
                .filter(|w| *w > 0);
        }
        total.add(last);
        ClientMessage {
            request_id: None,
            payload: Payload::TokenUsage(ThreadTokenUsageUpdate {
                thread_id: self.thread.to_string(),
                sdk_turn_id: turn.to_string(),
                total_usage: Some(breakdown(&total)),
                last_usage: Some(breakdown(last)),
                model_context_window: window,
            }),
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

/// Usage in the protocol's terms (counts past `i64::MAX` are capped).
fn breakdown(usage: &Usage) -> TokenUsageBreakdown {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    TokenUsageBreakdown {
        input_tokens: count(usage.input_tokens),
        cached_input_tokens: count(usage.cached_input_tokens),
        output_tokens: count(usage.output_tokens),
        reasoning_output_tokens: count(usage.reasoning_tokens),
        total_tokens: count(usage.total()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_runner_protocol::ProtocolVersion::{V0_2, V0_7};
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

    fn update(message: ClientMessage) -> ItemUpdate {
        match message.payload {
            Payload::Item(u) => u,
            other => panic!("not an item update: {other:?}"),
        }
    }

    fn thread() -> ThreadId {
        ThreadId::from("thread-1")
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
        let msg = item_update(
            &item(kind, ItemStatus::Completed),
            &thread(),
            Some("r".into()),
            V0_2,
        )
        .unwrap();
        assert_eq!(msg.request_id.as_deref(), Some("r"));
        let u = update(msg);
        assert_eq!(u.status, WireItemStatus::Completed);
        assert_eq!(u.item_type, ItemType::CommandExecution);
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
        let u = update(
            item_update(&item(kind, ItemStatus::InProgress), &thread(), None, V0_2).unwrap(),
        );
        assert_eq!(u.status, WireItemStatus::Running);
        let c = u.command_execution_item.unwrap();
        assert_eq!(c.process_id, "item-1");
        assert_eq!(c.output, None);
    }

    #[test]
    fn items_without_a_type_travel_as_unknown_with_a_summary() {
        let kind = ItemKind::Error {
            message: "model unreachable".into(),
        };
        let u =
            update(item_update(&item(kind, ItemStatus::Completed), &thread(), None, V0_2).unwrap());
        assert_eq!(u.item_type, ItemType::Unknown);
        assert_eq!(u.text.as_deref(), Some("error: model unreachable"));
        let todos = ItemKind::TodoList { todos: Vec::new() };
        assert!(
            item_update(
                &item(todos.clone(), ItemStatus::Completed),
                &thread(),
                None,
                V0_2
            )
            .is_none()
        );
        // 0.7 has a type for the list: a plan.
        let plan = update(
            item_update(&item(todos, ItemStatus::Completed), &thread(), None, V0_7).unwrap(),
        );
        assert_eq!(plan.item_type, ItemType::Plan);
        assert_eq!(plan.thread_id.as_deref(), Some("thread-1"));
        assert_eq!(plan.sdk_turn_id.as_deref(), Some("turn-1"));
    }
}

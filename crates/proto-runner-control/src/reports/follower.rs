//! One thread's events as the runner's updates, in the order and with the
//! request ids CompanyHelm's runner (v0.3.0) sends codex's: a turn's start
//! and its items echo the message that started it (a steered message's own
//! item echoes the steer), a command is said running once its process
//! exists (with its pid), and in 0.7 each model response's tokens and, when
//! the turn ends, the thread's name come without a request id, right before
//! the turn's end. A failed 0.7 turn ends as that runner ends one whose
//! SDK reported an error: with a `RequestError` echoing the message, and no
//! `TurnUpdate` completed.

use std::collections::{HashMap, HashSet};

use gantry_core::{Engine, Notification, ThreadFeed};
use gantry_runner_protocol::ProtocolVersion;
use gantry_runner_protocol::messages::{ClientMessage, Payload, TurnStatus as WireTurnStatus};
use gantry_types::{
    EventPayload, Item, ItemId, ItemKind, ItemStatus, ThreadId, ThreadView, TurnId, TurnStatus,
    Usage,
};

use super::super::outbox::Outbox;
use super::updates::{item_update, turn_update};
use super::usage::Tally;

/// What a failed turn's `RequestError` says when the engine said nothing.
const FAILED: &str = "the turn failed";

/// Turns one thread's events into updates until the engine stops.
pub(super) struct Follower {
    engine: Engine,
    thread: ThreadId,
    outbox: Outbox,
    version: ProtocolVersion,
    /// The key (request id) of each turn seen, by turn.
    keys: HashMap<TurnId, Option<String>>,
    /// The thread's name as last reported.
    name: Option<String>,
    /// What the thread used, for each response's `total_usage`.
    tally: Tally,
    /// Commands said running already (once their process started).
    announced: HashSet<ItemId>,
}

impl Follower {
    /// A follower of the thread `view` shows, from the event after it.
    pub(super) fn new(
        engine: Engine,
        view: &ThreadView,
        outbox: Outbox,
        version: ProtocolVersion,
    ) -> Self {
        // A command the restatement said running with its pid is not said
        // running again.
        let announced = view
            .turns
            .iter()
            .flat_map(|t| &t.items)
            .filter(|i| i.status == ItemStatus::InProgress && !awaits_process(i))
            .map(|i| i.id.clone())
            .collect();
        Self {
            engine,
            thread: view.thread.id.clone(),
            outbox,
            version,
            keys: HashMap::new(),
            name: view.thread.name.clone(),
            tally: Tally::of(view),
            announced,
        }
    }

    pub(super) async fn run(mut self, mut feed: ThreadFeed) {
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
        let v0_7 = self.version == ProtocolVersion::V0_7;
        match payload {
            EventPayload::TurnStarted { turn } => {
                self.keys.insert(turn.id.clone(), turn.key.clone());
                vec![turn_update(
                    turn.key.clone(),
                    &self.thread,
                    &turn.id,
                    WireTurnStatus::Running,
                )]
            }
            EventPayload::TurnCompleted {
                turn_id,
                status,
                usage,
                error,
                ..
            } => {
                self.turn_ended(turn_id, *status, usage, error.as_deref())
                    .await
            }
            // Its pid is not known yet: it is said running once it is.
            EventPayload::ItemStarted { item } if awaits_process(item) => Vec::new(),
            EventPayload::ItemStarted { item } => self.item(item).await,
            EventPayload::ItemUpdated { item } => {
                let command = matches!(item.kind, ItemKind::CommandExecution { .. });
                if command && !self.announced.insert(item.id.clone()) {
                    return Vec::new();
                }
                self.item(item).await
            }
            EventPayload::ItemCompleted { item } => {
                let mut updates = Vec::new();
                if matches!(item.kind, ItemKind::CommandExecution { .. })
                    && !self.announced.remove(&item.id)
                {
                    // Never started (refused, interrupted before it ran):
                    // said running first all the same, as every item is.
                    updates.extend(self.item(&not_started(item)).await);
                }
                updates.extend(self.item(item).await);
                updates
            }
            EventPayload::ModelResponded {
                turn_id,
                usage,
                context_window,
                ..
            } if v0_7 => vec![
                self.tally
                    .responded(&self.thread, turn_id, usage, *context_window),
            ],
            EventPayload::ThreadConfigured { settings }
                if v0_7 && settings.name.is_some() && settings.name != self.name =>
            {
                self.name.clone_from(&settings.name);
                vec![self.name_update(settings.name.clone())]
            }
            _ => Vec::new(),
        }
    }

    /// The update of an item, echoing the request it answers.
    async fn item(&mut self, item: &Item) -> Vec<ClientMessage> {
        // A steered message answers its own request.
        let key = match &item.kind {
            ItemKind::UserMessage { key: Some(key), .. } => Some(key.clone()),
            _ => self.key_of(&item.turn_id).await,
        };
        item_update(item, &self.thread, key, self.version)
            .into_iter()
            .collect()
    }

    /// What says a turn ended: in 0.2, its completed update; in 0.7, the
    /// thread's name then the completed update, or, for a failed turn,
    /// a `RequestError` saying why.
    async fn turn_ended(
        &mut self,
        turn: &TurnId,
        status: TurnStatus,
        usage: &Usage,
        error: Option<&str>,
    ) -> Vec<ClientMessage> {
        let key = self.key_of(turn).await;
        let completed = turn_update(key.clone(), &self.thread, turn, WireTurnStatus::Completed);
        if self.version == ProtocolVersion::V0_2 {
            return vec![completed];
        }
        self.tally.turn_ended(usage);
        if status == TurnStatus::Failed {
            let error_message = error.filter(|e| !e.trim().is_empty()).unwrap_or(FAILED);
            return vec![ClientMessage {
                request_id: key,
                payload: Payload::RequestError {
                    error_message: error_message.to_owned(),
                },
            }];
        }
        let mut updates = Vec::new();
        if let Some(name) = self.name_now().await {
            self.name = Some(name.clone());
            updates.push(self.name_update(Some(name)));
        }
        updates.push(completed);
        updates
    }

    /// The thread's name: the one it was given, else its first message's
    /// first line (codex's thread preview, which CompanyHelm's runner sends
    /// as the name after every turn).
    async fn name_now(&self) -> Option<String> {
        let view = self.engine.threads().read(&self.thread).await.ok()?;
        let name = view
            .thread
            .name
            .clone()
            .unwrap_or_else(|| view.thread.preview.clone());
        Some(name.trim().to_owned()).filter(|n| !n.is_empty())
    }

    fn name_update(&self, thread_name: Option<String>) -> ClientMessage {
        ClientMessage {
            request_id: None,
            payload: Payload::ThreadName {
                thread_id: self.thread.to_string(),
                thread_name,
            },
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

/// A command whose process has not started yet.
fn awaits_process(item: &Item) -> bool {
    matches!(
        item.kind,
        ItemKind::CommandExecution {
            process_id: None,
            ..
        }
    ) && item.status == ItemStatus::InProgress
}

/// A command that ended without having been said running, as it was when
/// it started: running, no output yet.
fn not_started(item: &Item) -> Item {
    let mut running = item.clone();
    running.status = ItemStatus::InProgress;
    if let ItemKind::CommandExecution {
        output, exit_code, ..
    } = &mut running.kind
    {
        output.clear();
        *exit_code = None;
    }
    running
}

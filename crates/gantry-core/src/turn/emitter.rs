//! Builds items and events for the turn task and sends them to the actor.
//!
//! The channel to the actor is bounded: every send waits for room, so a turn
//! whose actor falls behind (a slow store) waits too, with its model stream
//! or command unread, instead of piling messages up in memory. One channel,
//! awaited in order, so the actor gets everything in the order produced.

use std::sync::Arc;

use gantry_types::{DeltaKind, EventPayload, Item, ItemId, ItemKind, ItemStatus, TurnId};
use tokio::sync::mpsc;

use super::TurnMsg;
use crate::Clock;

/// The turn task's outlet to its actor.
#[derive(Clone)]
pub(crate) struct Emitter {
    tx: mpsc::Sender<TurnMsg>,
    clock: Arc<dyn Clock>,
    turn_id: TurnId,
}

impl Emitter {
    pub(crate) fn new(tx: mpsc::Sender<TurnMsg>, clock: Arc<dyn Clock>, turn_id: TurnId) -> Self {
        Self { tx, clock, turn_id }
    }

    /// The turn it emits for.
    pub(crate) fn turn_id(&self) -> &TurnId {
        &self.turn_id
    }

    pub(crate) fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Sends a durable event.
    pub(crate) async fn emit(&self, payload: EventPayload) {
        self.send(TurnMsg::Emit(payload)).await;
    }

    /// Waits until everything emitted so far is durably stored; an error
    /// when the store cannot take it now.
    pub(crate) async fn durable(&self) -> crate::writer::Flushed {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(TurnMsg::Flush(tx)).await;
        rx.await.unwrap_or_else(|_| {
            Err(crate::StoreUnavailable(
                "the engine is shutting down".into(),
            ))
        })
    }

    /// Sends any message to the actor, waiting for room in the channel.
    /// The actor outlives its turn task, so a failed send means the engine
    /// is gone and there is nobody left to tell.
    pub(crate) async fn send(&self, msg: TurnMsg) {
        let _ = self.tx.send(msg).await;
    }

    /// Streams live output of an item.
    pub(crate) async fn delta(&self, item_id: &ItemId, kind: DeltaKind) {
        self.send(TurnMsg::Delta {
            turn_id: self.turn_id.clone(),
            item_id: item_id.clone(),
            kind,
        })
        .await;
    }

    /// A new in-progress item of this turn, announced.
    pub(crate) async fn start_item(&self, round: u32, kind: ItemKind) -> Item {
        let item = self.new_item(round, kind);
        self.announce(&item).await;
        item
    }

    /// A new in-progress item of this turn, not yet announced.
    pub(crate) fn new_item(&self, round: u32, kind: ItemKind) -> Item {
        Item {
            id: ItemId::new(),
            turn_id: self.turn_id.clone(),
            round,
            status: ItemStatus::InProgress,
            started_at: self.now(),
            completed_at: None,
            kind,
            tool_call: None,
        }
    }

    /// Announces an item's start.
    pub(crate) async fn announce(&self, item: &Item) {
        self.emit(EventPayload::ItemStarted { item: item.clone() })
            .await;
    }

    /// Says an item in progress changed (a command's process started).
    pub(crate) async fn update_item(&self, item: Item) {
        self.emit(EventPayload::ItemUpdated { item }).await;
    }

    /// Completes an item with the given status.
    pub(crate) async fn complete_item(&self, mut item: Item, status: ItemStatus) {
        item.status = status;
        item.completed_at = Some(self.now());
        self.emit(EventPayload::ItemCompleted { item }).await;
    }

    /// A user message injected into the running turn.
    pub(crate) async fn user_item(
        &self,
        round: u32,
        text: String,
        key: Option<String>,
        images: Vec<gantry_types::ImagePart>,
    ) {
        let kind = ItemKind::UserMessage { text, key, images };
        let item = self.start_item(round, kind).await;
        self.complete_item(item, ItemStatus::Completed).await;
    }

    /// An error item explaining why the turn failed.
    pub(crate) async fn error_item(&self, round: u32, message: String) {
        let item = self.start_item(round, ItemKind::Error { message }).await;
        self.complete_item(item, ItemStatus::Completed).await;
    }
}

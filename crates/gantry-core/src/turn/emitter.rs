//! Builds items and events for the turn task and sends them to the actor.

use std::sync::Arc;

use gantry_types::{DeltaKind, EventPayload, Item, ItemId, ItemKind, ItemStatus, TurnId};
use tokio::sync::mpsc;

use super::TurnMsg;
use crate::Clock;

/// The turn task's outlet to its actor.
#[derive(Clone)]
pub(crate) struct Emitter {
    tx: mpsc::UnboundedSender<TurnMsg>,
    clock: Arc<dyn Clock>,
    turn_id: TurnId,
}

impl Emitter {
    pub(crate) fn new(
        tx: mpsc::UnboundedSender<TurnMsg>,
        clock: Arc<dyn Clock>,
        turn_id: TurnId,
    ) -> Self {
        Self { tx, clock, turn_id }
    }

    pub(crate) fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Sends a durable event. The actor outlives its turn task, so a failed
    /// send means the engine is gone and there is nobody left to tell.
    pub(crate) fn emit(&self, payload: EventPayload) {
        let _ = self.tx.send(TurnMsg::Emit(payload));
    }

    /// Waits until everything emitted so far is durably stored; an error
    /// when the store cannot take it now.
    pub(crate) async fn durable(&self) -> crate::writer::Flushed {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(TurnMsg::Flush(tx));
        rx.await.unwrap_or_else(|_| {
            Err(crate::StoreUnavailable(
                "the engine is shutting down".into(),
            ))
        })
    }

    /// Sends any message to the actor.
    pub(crate) fn send(&self, msg: TurnMsg) {
        let _ = self.tx.send(msg);
    }

    pub(crate) fn delta(&self, item_id: &ItemId, kind: DeltaKind) {
        let _ = self.tx.send(TurnMsg::Delta {
            turn_id: self.turn_id.clone(),
            item_id: item_id.clone(),
            kind,
        });
    }

    /// A new in-progress item of this turn, announced.
    pub(crate) fn start_item(&self, round: u32, kind: ItemKind) -> Item {
        let item = self.new_item(round, kind);
        self.announce(&item);
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
    pub(crate) fn announce(&self, item: &Item) {
        self.emit(EventPayload::ItemStarted { item: item.clone() });
    }

    /// Completes an item with the given status.
    pub(crate) fn complete_item(&self, mut item: Item, status: ItemStatus) {
        item.status = status;
        item.completed_at = Some(self.now());
        self.emit(EventPayload::ItemCompleted { item });
    }

    /// A user message injected into the running turn.
    pub(crate) fn user_item(&self, round: u32, text: String, key: Option<String>) {
        let item = self.start_item(round, ItemKind::UserMessage { text, key });
        self.complete_item(item, ItemStatus::Completed);
    }

    /// An error item explaining why the turn failed.
    pub(crate) fn error_item(&self, round: u32, message: String) {
        let item = self.start_item(round, ItemKind::Error { message });
        self.complete_item(item, ItemStatus::Completed);
    }
}

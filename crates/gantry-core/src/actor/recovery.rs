//! Closing a turn that was running when the process died.

use gantry_types::{EventPayload, Item, ItemKind, ItemStatus};

use super::ThreadActor;

/// Said in the error item and the turn's error.
const CRASHED: &str = "the gantry process stopped while this turn was running; it was closed as interrupted on restart";

impl ThreadActor {
    /// The log says a turn is running but no task runs it: the process that
    /// ran it died. Close its open items and the turn as interrupted, keeping
    /// everything that was completed.
    pub(super) async fn recover_crashed_turn(&mut self) {
        let Some(tv) = self.view.running_turn() else {
            return;
        };
        let turn = tv.turn.clone();
        let open: Vec<Item> = tv
            .items
            .iter()
            .filter(|i| i.status == ItemStatus::InProgress)
            .cloned()
            .collect();
        let now = self.shared.clock.now_ms();
        for mut item in open {
            item.status = ItemStatus::Interrupted;
            item.completed_at = Some(now);
            self.emit(EventPayload::ItemCompleted { item }).await;
        }
        let error = ItemKind::Error {
            message: CRASHED.to_owned(),
        };
        self.emit_instant_item(&turn.id, turn.rounds, error).await;
        self.emit(EventPayload::TurnCompleted {
            turn_id: turn.id,
            status: gantry_types::TurnStatus::Interrupted,
            rounds: turn.rounds,
            usage: turn.usage,
            cost_usd: turn.cost_usd,
            error: Some(CRASHED.to_owned()),
            failure: None,
        })
        .await;
        tracing::warn!(thread = %self.view.thread.id, "closed a turn interrupted by a crash");
    }
}

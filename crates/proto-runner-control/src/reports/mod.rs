//! Engine events as the runner's updates: each thread the runner serves is
//! followed from its event log ([`follower`]), and every turn and item
//! change becomes a turn or item update naming its thread and turn and
//! echoing the request id of the message that caused it (the idempotency
//! key the message was sent with), shaped as CompanyHelm's runner shapes
//! codex's ([`updates`]). In 0.7 each model response's token usage
//! ([`usage`]) and the thread's name are reported too.

mod follower;
mod updates;
mod usage;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use gantry_core::Engine;
use gantry_runner_protocol::ProtocolVersion;
use gantry_runner_protocol::messages::{ClientMessage, TurnStatus as WireTurnStatus};
use gantry_types::{ItemKind, ThreadId, ThreadView, TurnStatus};

use super::outbox::Outbox;
use follower::Follower;
use updates::item_update;
pub(crate) use updates::turn_update;

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
                let follower = Follower::new(engine.clone(), &view, outbox.clone(), self.version);
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

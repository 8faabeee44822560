//! The thread events a subscriber follows, from the moment it subscribed:
//! one session's, or every session's (sessions created later included).
//! The engine's feeds survive falling behind the bus by themselves.

use std::sync::Arc;

use gantry_core::{Engine, EngineError, Feed, Notification};
use gantry_types::{Event, ThreadId};

/// Whose events.
#[derive(Debug, Clone)]
pub(super) enum Scope {
    /// Every session's, those created later too.
    All,
    /// One session's.
    One(ThreadId),
}

/// A subscription to the scope's durable events.
pub(super) struct ThreadFeed {
    feed: Feed,
}

impl ThreadFeed {
    /// Subscribes to what happens in `scope` from now on.
    pub(super) async fn start(engine: Engine, scope: Scope) -> Result<Self, EngineError> {
        let feed = match &scope {
            Scope::All => engine.feeds().follow_all_now(),
            Scope::One(id) => {
                let next = engine.threads().read(id).await?.thread.last_seq + 1;
                engine.feeds().follow(id, next).await?
            }
        };
        Ok(Self { feed })
    }

    /// The next durable event; `None` once the engine shut down. Deltas
    /// (streamed text) are skipped. Cancel-safe.
    pub(super) async fn next(&mut self) -> Result<Option<Arc<Event>>, EngineError> {
        loop {
            match self.feed.next().await? {
                None => return Ok(None),
                Some(Notification::Event(event)) => return Ok(Some(event)),
                Some(Notification::Delta(_) | Notification::Lagged { .. }) => {}
            }
        }
    }
}

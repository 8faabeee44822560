//! The thread events a subscriber follows, from the moment it subscribed:
//! one session's, or every session's (sessions created later included).
//! Survives falling behind the bus by resubscribing where it left off.

use std::sync::Arc;

use gantry_core::{Engine, EngineError, Notification, ResumeFrom, Subscription};
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
    engine: Engine,
    scope: Scope,
    sub: Subscription,
    /// Set when the subscription fell behind: where to resubscribe. Kept
    /// until the new subscription exists, so `next` stays cancel-safe.
    lagged: Option<ResumeFrom>,
}

impl ThreadFeed {
    /// Subscribes to what happens in `scope` from now on.
    pub(super) async fn start(engine: Engine, scope: Scope) -> Result<Self, EngineError> {
        let sub = match &scope {
            Scope::All => engine.subscribe_all_now(),
            Scope::One(id) => {
                let next = engine.read(id).await?.thread.last_seq + 1;
                engine.subscribe(id, next).await?
            }
        };
        Ok(Self {
            engine,
            scope,
            sub,
            lagged: None,
        })
    }

    /// The next durable event; `None` once the engine shut down. Deltas
    /// (streamed text) are skipped. Cancel-safe.
    pub(super) async fn next(&mut self) -> Result<Option<Arc<Event>>, EngineError> {
        loop {
            if let Some(resume) = &self.lagged {
                self.sub = subscribe(&self.engine, &self.scope, resume).await?;
                self.lagged = None;
            }
            match self.sub.next().await {
                None => return Ok(None),
                Some(Notification::Event(event)) => return Ok(Some(event)),
                Some(Notification::Delta(_)) => {}
                Some(Notification::Lagged { resume }) => self.lagged = Some(resume),
            }
        }
    }
}

/// Subscribes to `scope` from `from`.
async fn subscribe(
    engine: &Engine,
    scope: &Scope,
    from: &ResumeFrom,
) -> Result<Subscription, EngineError> {
    match scope {
        Scope::All => engine.subscribe_all(from.clone()).await,
        Scope::One(id) => {
            let seq = from.threads.get(id).copied().unwrap_or(from.from_seq);
            engine.subscribe(id, seq).await
        }
    }
}

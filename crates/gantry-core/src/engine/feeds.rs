//! Subscriptions to threads' events and to engine-wide events.

use super::*;

/// Feeds: a thread's or every thread's events, and engine-wide events.
/// Get one from [`Engine::feeds`].
#[derive(Clone, Copy)]
pub struct Feeds<'e> {
    pub(crate) engine: &'e Engine,
}

impl Feeds<'_> {
    /// Subscribes to one thread's notifications from `from_seq` (1 = the
    /// whole log; `last_seq + 1` = only what happens next).
    pub async fn subscribe(
        &self,
        thread: &ThreadId,
        from_seq: u64,
    ) -> Result<Subscription, EngineError> {
        // Loading the actor proves the thread exists and flushes nothing.
        self.engine.actor(thread).await?;
        self.engine.shared.bus.subscribe(thread, from_seq).await
    }

    /// Subscribes to every thread's notifications from commit cursor
    /// `from` (1 = everything stored; see [`gantry_types::Event::cursor`]).
    /// Stored events are read page by page, so a subscriber however far
    /// behind costs bounded memory.
    pub async fn subscribe_all(self, from: u64) -> Result<Subscription, EngineError> {
        self.engine.shared.bus.subscribe_all(from).await
    }

    /// Subscribes to every thread's notifications from now on (cheap: no
    /// replay, nothing read from the store).
    pub fn subscribe_all_now(self) -> Subscription {
        self.engine.shared.bus.subscribe_all_now()
    }

    /// Subscribes to engine-wide events (MCP startup, agents, skill
    /// packages, memory, scheduled jobs, language servers) from now on.
    pub fn engine_events(self) -> EngineEvents {
        self.engine.shared.events.subscribe()
    }

    /// Engine-wide events from `seq` on: the last ones the engine keeps
    /// (about a thousand), then live.
    pub fn engine_events_from(self, seq: u64) -> EngineEvents {
        self.engine.shared.events.subscribe_from(seq)
    }
}

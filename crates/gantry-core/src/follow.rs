//! Following one thread: a subscription that picks itself up after falling
//! behind the bus (the store has what the live feed dropped), so callers
//! see events and deltas and never handle a lag.

use gantry_types::ThreadId;

use crate::bus::{Notification, Subscription};
use crate::{Engine, EngineError};

/// One thread's notifications from a seq on, across lags.
pub struct ThreadFeed {
    engine: Engine,
    thread: ThreadId,
    sub: Subscription,
}

impl ThreadFeed {
    /// The next event or delta; `Ok(None)` once the engine shut down, an
    /// error if picking up after a lag failed. Never
    /// [`Notification::Lagged`]: deltas missed then are folded into the
    /// completed items, events are replayed from the store.
    pub async fn next(&mut self) -> Result<Option<Notification>, EngineError> {
        loop {
            match self.sub.next().await {
                Some(Notification::Lagged { resume }) => {
                    let from = resume
                        .threads
                        .get(&self.thread)
                        .copied()
                        .unwrap_or(resume.from_seq);
                    self.sub = self.engine.subscribe(&self.thread, from).await?;
                }
                other => return Ok(other),
            }
        }
    }

    /// The thread followed.
    pub fn thread(&self) -> &ThreadId {
        &self.thread
    }
}

impl Engine {
    /// Follows `thread` from `from_seq` (stored events first, then live),
    /// resuming by itself whenever it falls behind.
    pub async fn follow(
        &self,
        thread: &ThreadId,
        from_seq: u64,
    ) -> Result<ThreadFeed, EngineError> {
        let sub = self.subscribe(thread, from_seq).await?;
        Ok(ThreadFeed {
            engine: self.clone(),
            thread: thread.clone(),
            sub,
        })
    }
}

//! Following a feed: a subscription that picks itself up after falling
//! behind the bus (the store has what the live feed dropped), so callers
//! see events and deltas and never handle a lag.

use gantry_types::ThreadId;

use crate::bus::{Notification, Subscription};
use crate::{Engine, EngineError};

/// What a feed follows.
#[derive(Debug, Clone)]
enum Target {
    Thread(ThreadId),
    All,
}

/// One thread's (or every thread's) notifications, across lags.
pub struct Feed {
    engine: Engine,
    target: Target,
    sub: Subscription,
    /// Set when the subscription fell behind: where to pick up. Kept until
    /// the new subscription exists, so `next` stays cancel-safe.
    lagged: Option<u64>,
}

/// The feed of one thread.
pub type ThreadFeed = Feed;

impl Feed {
    /// The next event or delta; `Ok(None)` once the engine shut down, an
    /// error if picking up after a lag failed. Never
    /// [`Notification::Lagged`]: deltas missed then are folded into the
    /// completed items, events are replayed from the store. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<Notification>, EngineError> {
        loop {
            if let Some(from) = self.lagged {
                self.sub = match &self.target {
                    Target::Thread(id) => self.engine.feeds().subscribe(id, from).await?,
                    Target::All => self.engine.feeds().subscribe_all(from).await?,
                };
                self.lagged = None;
            }
            match self.sub.next().await {
                Some(Notification::Lagged { resume_from }) => self.lagged = Some(resume_from),
                other => return Ok(other),
            }
        }
    }

    /// The thread followed, for a thread's feed.
    pub fn thread(&self) -> Option<&ThreadId> {
        match &self.target {
            Target::Thread(id) => Some(id),
            Target::All => None,
        }
    }

    /// Where the feed would pick up if dropped now (a seq, or a cursor for
    /// the all-threads feed).
    pub fn resume_from(&self) -> u64 {
        self.lagged.unwrap_or_else(|| self.sub.resume_from())
    }
}

impl crate::engine::Feeds<'_> {
    /// Follows `thread` from `from_seq` (stored events first, then live),
    /// resuming by itself whenever it falls behind.
    pub async fn follow(self, thread: &ThreadId, from_seq: u64) -> Result<Feed, EngineError> {
        let sub = self.engine.feeds().subscribe(thread, from_seq).await?;
        Ok(Feed {
            engine: self.engine.clone(),
            target: Target::Thread(thread.clone()),
            sub,
            lagged: None,
        })
    }

    /// Follows every thread from commit cursor `from` (stored events page
    /// by page, then live), resuming by itself whenever it falls behind.
    pub async fn follow_all(self, from: u64) -> Result<Feed, EngineError> {
        let sub = self.engine.feeds().subscribe_all(from).await?;
        Ok(self.engine.feed_all(sub))
    }

    /// Follows every thread from now on.
    pub fn follow_all_now(self) -> Feed {
        self.engine
            .feed_all(self.engine.feeds().subscribe_all_now())
    }
}

impl Engine {
    fn feed_all(&self, sub: Subscription) -> Feed {
        Feed {
            engine: self.clone(),
            target: Target::All,
            sub,
            lagged: None,
        }
    }
}

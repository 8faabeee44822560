//! A subscription: its backlog (what the store and the in-memory tail
//! owe it), the page-by-page replay of the all-threads feed, and the live
//! receiver, with the position that drops anything already delivered.

use super::*;

/// The stored events an all-threads subscription still has to read.
pub(super) struct Replay {
    pub(super) store: Arc<dyn Store>,
    /// The first cursor not read yet.
    pub(super) next: u64,
    /// Where the in-memory tail takes over.
    pub(super) until: u64,
}

impl Replay {
    pub(super) async fn page(&mut self) -> Result<VecDeque<Notification>, EngineError> {
        let events = self
            .store
            .events_after(self.next.saturating_sub(1), REPLAY_PAGE)
            .await?;
        let mut page = VecDeque::with_capacity(events.len());
        let full = events.len() == REPLAY_PAGE;
        for e in events {
            if e.cursor >= self.until {
                self.next = self.until;
                return Ok(page);
            }
            self.next = e.cursor + 1;
            page.push_back(Notification::Event(Arc::new(e)));
        }
        if !full {
            self.next = self.until;
        }
        Ok(page)
    }

    fn done(&self) -> bool {
        self.next >= self.until
    }
}

/// What a subscription owes next.
#[derive(Debug, Clone, Copy)]
pub(super) enum Position {
    /// One thread's feed: the next seq.
    Seq(u64),
    /// The all-threads feed: the next commit cursor.
    Cursor(u64),
}

/// A stream of notifications from one thread or all threads.
pub struct Subscription {
    pub(super) backlog: VecDeque<Notification>,
    /// All threads: stored events still to read before `after_replay`.
    pub(super) replay: Option<Replay>,
    /// All threads: the in-memory tail and partial texts, after the replay.
    pub(super) after_replay: VecDeque<Notification>,
    pub(super) rx: broadcast::Receiver<Notification>,
    pub(super) next: Position,
    pub(super) ended: bool,
    /// One thread: the bus and thread to tell when this subscription goes.
    pub(super) release: Option<(Weak<Bus>, ThreadId)>,
}

impl Subscription {
    pub(super) fn new(rx: broadcast::Receiver<Notification>, next: Position) -> Self {
        Self {
            backlog: VecDeque::new(),
            replay: None,
            after_replay: VecDeque::new(),
            rx,
            next,
            ended: false,
            release: None,
        }
    }

    /// The next notification; `None` once the subscription ended (after a
    /// [`Notification::Lagged`], or when the engine shut down).
    pub async fn next(&mut self) -> Option<Notification> {
        loop {
            if self.ended {
                return None;
            }
            if self.backlog.is_empty()
                && let Some(replay) = &mut self.replay
            {
                if replay.done() {
                    self.replay = None;
                    self.backlog = std::mem::take(&mut self.after_replay);
                } else {
                    match replay.page().await {
                        Ok(page) => self.backlog = page,
                        Err(e) => {
                            // Resubscribing reads the same page first and
                            // reports the store's error to the caller.
                            tracing::warn!(error = %e, "replay from the store failed");
                            return Some(self.lagged());
                        }
                    }
                    continue;
                }
            }
            let n = match self.backlog.pop_front() {
                Some(n) => n,
                None => match self.rx.recv().await {
                    Ok(n) => n,
                    Err(RecvError::Lagged(_)) => return Some(self.lagged()),
                    Err(RecvError::Closed) => {
                        self.ended = true;
                        return None;
                    }
                },
            };
            if let Notification::Event(e) = &n {
                match &mut self.next {
                    Position::Seq(next) => {
                        if e.seq < *next {
                            continue;
                        }
                        *next = e.seq + 1;
                    }
                    Position::Cursor(next) => {
                        if e.cursor < *next {
                            continue;
                        }
                        *next = e.cursor + 1;
                    }
                }
            }
            return Some(n);
        }
    }

    fn lagged(&mut self) -> Notification {
        self.ended = true;
        Notification::Lagged {
            resume_from: self.resume_from(),
        }
    }

    /// Where to resume if this subscription were dropped now: the next seq
    /// of a thread's feed, the next commit cursor of the all-threads feed.
    pub fn resume_from(&self) -> u64 {
        match self.next {
            Position::Seq(n) | Position::Cursor(n) => n,
        }
    }

    /// The subscription as a `Stream`.
    pub fn into_stream(self) -> impl futures_util::Stream<Item = Notification> + Send {
        futures_util::stream::unfold(self, |mut s| async move { s.next().await.map(|n| (n, s)) })
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some((bus, thread)) = &self.release
            && let Some(bus) = bus.upgrade()
        {
            bus.release(thread);
        }
    }
}

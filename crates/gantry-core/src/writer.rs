//! The store writer: one task that persists events off the turn loop's hot
//! path, committing whatever has queued up as one transaction (group
//! commit), and only then publishing the events to subscribers: no client
//! ever sees an event the log does not hold.
//!
//! When a commit fails (a full disk, a broken database), the events stay
//! queued in memory and the commit is retried with backoff; meanwhile every
//! flush waiting on them fails at once with the cause, so a turn that must
//! not act before its log is durable (write-ahead) fails cleanly instead of
//! hanging, and an interrupt still gets through.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use gantry_store::{Commit, Store};
use gantry_types::{Event, Thread, ThreadId};
use tokio::sync::{mpsc, oneshot};

use crate::bus::Bus;

/// Most events taken from the queue at once.
const MAX_BATCH: usize = 1024;
/// Events that may wait for the writer before publishers slow down.
const QUEUE: usize = 8192;
/// Events held in memory while commits fail; past it the queue fills and
/// publishers wait (back-pressure, never loss).
const MAX_PENDING: usize = 64 * 1024;
/// First and longest wait between failed commits.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// Why a flush failed: the store refused the commit holding the events it
/// waited for (they stay queued and are retried).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the event log cannot be saved: {0}")]
pub struct StoreUnavailable(pub String);

/// What a flush reports.
pub(crate) type Flushed = Result<(), StoreUnavailable>;

// `Write` is the hot case; boxing it would allocate per event.
#[allow(clippy::large_enum_variant)]
enum Op {
    Write { event: Event, thread: Thread },
    Flush(oneshot::Sender<Flushed>),
}

/// Handle to the writer task.
#[derive(Clone)]
pub(crate) struct Writer {
    tx: mpsc::Sender<Op>,
}

impl Writer {
    /// Starts the writer task; `on_health` hears when commits start failing
    /// (with the cause) and when they succeed again (`None`).
    pub(crate) fn spawn(
        store: Arc<dyn Store>,
        bus: Arc<Bus>,
        on_health: impl Fn(Option<&str>) + Send + 'static,
    ) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(
            Task {
                store,
                bus,
                rx,
                pending: Pending::default(),
                failing: None,
                on_health: Box::new(on_health),
            }
            .run(),
        );
        Self { tx }
    }

    /// Queues an event and the thread's metadata after it.
    pub(crate) async fn write(&self, event: Event, thread: Thread) {
        // The writer lives as long as any engine handle; a send can only fail
        // during runtime teardown, when nothing can be saved anyway.
        let _ = self.tx.send(Op::Write { event, thread }).await;
    }

    /// Waits until everything queued before this call is committed, or
    /// until a commit holding it failed.
    pub(crate) async fn flush(&self) -> Flushed {
        let (tx, rx) = oneshot::channel();
        self.flush_then(tx).await;
        rx.await
            .unwrap_or_else(|_| Err(StoreUnavailable("the engine is shutting down".into())))
    }

    /// Signals `done` once everything queued before this call is committed
    /// (or a commit holding it failed), without waiting for it here.
    pub(crate) async fn flush_then(&self, done: oneshot::Sender<Flushed>) {
        let _ = self.tx.send(Op::Flush(done)).await;
    }
}

/// Events taken from the queue and not yet committed.
#[derive(Default)]
struct Pending {
    events: Vec<Event>,
    threads: HashMap<ThreadId, Thread>,
    /// Flushes waiting for everything before them.
    flushes: Vec<oneshot::Sender<Flushed>>,
}

struct Task {
    store: Arc<dyn Store>,
    bus: Arc<Bus>,
    rx: mpsc::Receiver<Op>,
    pending: Pending,
    /// The cause of the last failed commit, while commits fail.
    failing: Option<String>,
    on_health: OnHealth,
}

/// Told when commits start failing (with the cause) and succeed again.
type OnHealth = Box<dyn Fn(Option<&str>) + Send>;

impl Task {
    async fn run(mut self) {
        let mut ops = Vec::with_capacity(MAX_BATCH);
        let mut delay = RETRY_FIRST;
        loop {
            if self.failing.is_none() {
                // Healthy: wait for work, then commit all that queued meanwhile.
                if self.rx.recv_many(&mut ops, MAX_BATCH).await == 0 {
                    return;
                }
                if ops.len() < MAX_BATCH {
                    // Let the producers that woke us add what they have:
                    // one commit of many events costs about what one of a
                    // single event does, and clients wait for commits.
                    tokio::task::yield_now().await;
                    while ops.len() < MAX_BATCH {
                        match self.rx.try_recv() {
                            Ok(op) => ops.push(op),
                            Err(_) => break,
                        }
                    }
                }
                self.absorb(&mut ops);
            } else {
                // Failing: keep taking work until the retry is due, so
                // flushes fail at once and the actors never block, unless
                // the backlog is full (then publishers wait).
                let retry = tokio::time::sleep(delay);
                tokio::pin!(retry);
                loop {
                    if self.pending.events.len() >= MAX_PENDING {
                        (&mut retry).await;
                        break;
                    }
                    tokio::select! {
                        () = &mut retry => break,
                        n = self.rx.recv_many(&mut ops, MAX_BATCH) => {
                            if n == 0 {
                                // Nobody writes any more; the backlog is
                                // still worth saving.
                                (&mut retry).await;
                                break;
                            }
                            self.absorb(&mut ops);
                        }
                    }
                }
                delay = (delay * 2).min(RETRY_MAX);
            }
            if self.commit().await {
                delay = RETRY_FIRST;
            }
        }
    }

    /// Moves queued ops into the pending batch; while commits fail, a flush
    /// fails at once with the cause.
    fn absorb(&mut self, ops: &mut Vec<Op>) {
        for op in ops.drain(..) {
            match op {
                Op::Write { event, thread } => {
                    self.pending.threads.insert(thread.id.clone(), thread);
                    self.pending.events.push(event);
                }
                Op::Flush(done) => match &self.failing {
                    Some(cause) if !self.pending.events.is_empty() => {
                        let _ = done.send(Err(StoreUnavailable(cause.clone())));
                    }
                    _ => self.pending.flushes.push(done),
                },
            }
        }
    }

    /// Commits the pending batch; publishes its events and answers its
    /// flushes on success. Returns whether the store took it.
    async fn commit(&mut self) -> bool {
        if !self.pending.events.is_empty() || !self.pending.threads.is_empty() {
            let commit = Commit {
                events: std::mem::take(&mut self.pending.events),
                threads: self.pending.threads.values().cloned().collect(),
            };
            let last = match self.store.commit(&commit).await {
                Ok(last) => last,
                Err(e) => {
                    let cause = e.to_string();
                    if self.failing.as_deref() != Some(cause.as_str()) {
                        tracing::error!(error = %cause, events = commit.events.len(), "store commit failed; events are kept in memory and the commit is retried");
                        (self.on_health)(Some(&cause));
                    }
                    for done in self.pending.flushes.drain(..) {
                        let _ = done.send(Err(StoreUnavailable(cause.clone())));
                    }
                    self.pending.events = commit.events;
                    self.failing = Some(cause);
                    return false;
                }
            };
            if self.failing.take().is_some() {
                tracing::info!(
                    events = commit.events.len(),
                    "store commit succeeded again; the kept events are saved"
                );
                (self.on_health)(None);
            }
            self.pending.threads.clear();
            // The store gave the commit's events the cursors up to `last`.
            let first = last + 1 - commit.events.len() as u64;
            for (mut event, cursor) in commit.events.into_iter().zip(first..) {
                event.cursor = cursor;
                self.bus.publish_event(Arc::new(event));
            }
        }
        for done in self.pending.flushes.drain(..) {
            let _ = done.send(Ok(()));
        }
        true
    }
}

//! The store writer: one task that persists events off the turn loop's hot
//! path, committing whatever has queued up as one transaction (group commit).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use gantry_store::{Commit, Store};
use gantry_types::{Event, Thread, ThreadId};
use tokio::sync::{mpsc, oneshot};

use crate::bus::Bus;

/// Most events in one commit; more wait for the next.
const MAX_BATCH: usize = 1024;
/// Events that may wait for the writer before publishers slow down.
const QUEUE: usize = 8192;

// `Write` is the hot case; boxing it would allocate per event.
#[allow(clippy::large_enum_variant)]
enum Op {
    Write { event: Arc<Event>, thread: Thread },
    Flush(oneshot::Sender<()>),
}

/// Handle to the writer task.
#[derive(Clone)]
pub(crate) struct Writer {
    tx: mpsc::Sender<Op>,
}

impl Writer {
    /// Starts the writer task.
    pub(crate) fn spawn(store: Arc<dyn Store>, bus: Arc<Bus>) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(store, bus, rx));
        Self { tx }
    }

    /// Queues an event and the thread's metadata after it.
    pub(crate) async fn write(&self, event: Arc<Event>, thread: Thread) {
        // The writer lives as long as any engine handle; a send can only fail
        // during runtime teardown, when nothing can be saved anyway.
        let _ = self.tx.send(Op::Write { event, thread }).await;
    }

    /// Waits until everything queued before this call is committed.
    pub(crate) async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        self.flush_then(tx).await;
        let _ = rx.await;
    }

    /// Signals `done` once everything queued before this call is committed,
    /// without waiting for it here.
    pub(crate) async fn flush_then(&self, done: oneshot::Sender<()>) {
        let _ = self.tx.send(Op::Flush(done)).await;
    }
}

async fn run(store: Arc<dyn Store>, bus: Arc<Bus>, mut rx: mpsc::Receiver<Op>) {
    let mut ops = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut ops, MAX_BATCH).await > 0 {
        let mut commit = Commit::default();
        let mut threads: HashMap<ThreadId, Thread> = HashMap::new();
        let mut flushes = Vec::new();
        for op in ops.drain(..) {
            match op {
                Op::Write { event, thread } => {
                    commit.events.push(Event::clone(&event));
                    threads.insert(thread.id.clone(), thread);
                }
                Op::Flush(done) => flushes.push(done),
            }
        }
        commit.threads = threads.into_values().collect();
        commit_with_retry(store.as_ref(), &commit).await;
        let mut last: HashMap<&ThreadId, u64> = HashMap::new();
        for e in &commit.events {
            last.insert(&e.thread_id, e.seq);
        }
        for (thread, seq) in last {
            bus.mark_persisted(thread, seq);
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// Retries until the store takes the commit: losing events is worse than
/// stalling, and the bus keeps unpersisted events for subscribers meanwhile.
async fn commit_with_retry(store: &dyn Store, commit: &Commit) {
    if commit.events.is_empty() && commit.threads.is_empty() {
        return;
    }
    let mut delay = Duration::from_millis(50);
    let mut attempt = 1u32;
    while let Err(e) = store.commit(commit).await {
        tracing::error!(error = %e, attempt, events = commit.events.len(), "store commit failed; retrying");
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(5));
        attempt += 1;
    }
}

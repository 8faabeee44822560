//! Group commit: every runner's batch of updates, and every request the
//! control plane sends, go to one writer task that writes whatever has
//! queued up meanwhile in one transaction. In order: a request is queued
//! before it is sent, so it is never committed after a reply to it.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::store::{ControlPlaneStore, StoreError, ThreadUpdateRecord, Write};

/// Batches written in one transaction at most.
const MAX_GROUP: usize = 256;

/// What a batch's writer answers: its log entries, in order.
type Written = Result<Vec<ThreadUpdateRecord>, StoreError>;

struct Job {
    writes: Vec<Write>,
    done: oneshot::Sender<Written>,
}

/// The queue to the writer task (which ends when the last handle is dropped).
pub(crate) struct Writer {
    queue: mpsc::UnboundedSender<Job>,
}

impl Writer {
    /// Starts the writer task over `store` (needs a tokio runtime).
    pub(crate) fn start(store: Arc<dyn ControlPlaneStore>) -> Self {
        let (queue, jobs) = mpsc::unbounded_channel();
        tokio::spawn(run(store, jobs));
        Self { queue }
    }

    /// Queues `writes` now; the future is their commit.
    pub(crate) fn submit(&self, writes: Vec<Write>) -> impl Future<Output = Written> + use<> {
        let (done, committed) = oneshot::channel();
        let queued = self.queue.send(Job { writes, done }).is_ok();
        async move {
            if !queued {
                return Err(stopped());
            }
            committed.await.unwrap_or_else(|_| Err(stopped()))
        }
    }
}

fn stopped() -> StoreError {
    StoreError::Database("the store's writer has stopped".to_owned())
}

/// Writes queued jobs, as many as have queued up, in one transaction; when
/// that fails, each one alone, so one bad batch fails only itself.
async fn run(store: Arc<dyn ControlPlaneStore>, mut jobs: mpsc::UnboundedReceiver<Job>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while jobs.recv_many(&mut group, MAX_GROUP).await > 0 {
        if group.len() == 1 {
            let job = group.remove(0);
            let written = store.write(&job.writes).await;
            let _ = job.done.send(written);
            continue;
        }
        let lengths: Vec<usize> = group.iter().map(|j| j.writes.len()).collect();
        let writes: Vec<Write> = group
            .iter_mut()
            .flat_map(|j| std::mem::take(&mut j.writes))
            .collect();
        match store.write(&writes).await {
            Ok(entries) => {
                let mut entries = entries.into_iter();
                let mut written = writes.iter();
                for (job, length) in group.drain(..).zip(lengths) {
                    let changes = written
                        .by_ref()
                        .take(length)
                        .filter(|w| matches!(w, Write::Change { .. }))
                        .count();
                    let _ = job.done.send(Ok(entries.by_ref().take(changes).collect()));
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, jobs = group.len(), "group write failed; writing each batch alone");
                let mut start = 0;
                for (job, length) in group.drain(..).zip(lengths) {
                    let written = store.write(&writes[start..start + length]).await;
                    start += length;
                    let _ = job.done.send(written);
                }
            }
        }
    }
}

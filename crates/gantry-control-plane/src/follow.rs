//! Following a thread: its update log after a seq, replayed from the store,
//! then live (from this process, or among replicas from JetStream, where
//! every replica's updates are), with no gap and no duplicate.

use futures_util::StreamExt;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::ControlPlane;
use crate::nats::Follow;
use crate::store::{ControlPlaneStore, ThreadUpdateRecord};

/// Entries read from the store at a time while catching up.
const PAGE: i64 = 256;

/// Entries buffered for a follower that reads slower than they come.
const BUFFER: usize = 64;

/// The follower went away (or the store failed): stop following.
struct Stop;

impl ControlPlane {
    /// The thread's updates with `seq > after`, in order, then every new one
    /// as it is applied, until the caller drops the stream or the control
    /// plane stops.
    pub(crate) fn follow(
        &self,
        thread_id: String,
        after: i64,
    ) -> ReceiverStream<ThreadUpdateRecord> {
        let (tx, rx) = mpsc::channel(BUFFER);
        // Subscribed before the store is read: an update applied meanwhile
        // is in both, and the seq check drops the second copy.
        let local = self.inner.tracker.subscribe();
        let cp = self.clone();
        tokio::spawn(async move {
            let inner = &cp.inner;
            let mut live = match &inner.cluster {
                None => Live::Here(local),
                Some(cluster) => match cluster.follow(&thread_id).await {
                    Ok(stream) => Live::Nats(stream),
                    Err(e) => {
                        tracing::error!(thread = %thread_id, error = %e, "cannot follow a thread");
                        return;
                    }
                },
            };
            let mut last = after;
            if catch_up(inner.store.as_ref(), &thread_id, &mut last, &tx)
                .await
                .is_err()
            {
                return;
            }
            loop {
                let received = tokio::select! {
                    received = live.next() => received,
                    () = tx.closed() => return,
                    () = inner.stop.cancelled() => return,
                };
                let caught_up = match received {
                    Received::Entry(entry) if entry.thread_id != thread_id || entry.seq <= last => {
                        Ok(())
                    }
                    Received::Entry(entry) if entry.seq == last + 1 => {
                        last = entry.seq;
                        tx.send(entry).await.map_err(|_| Stop)
                    }
                    // A gap (or updates dropped because this follower fell
                    // behind, or that another replica committed and never
                    // published): the store has them all.
                    Received::Entry(_) | Received::Lagged => {
                        catch_up(inner.store.as_ref(), &thread_id, &mut last, &tx).await
                    }
                    Received::Closed => return,
                };
                if caught_up.is_err() {
                    return;
                }
            }
        });
        ReceiverStream::new(rx)
    }
}

/// Where live updates come from: this process's broadcast, or, among
/// replicas, the thread's subject on JetStream.
enum Live {
    Here(broadcast::Receiver<ThreadUpdateRecord>),
    Nats(Follow),
}

/// What the live source gave.
enum Received {
    Entry(ThreadUpdateRecord),
    /// Something was missed: read the store.
    Lagged,
    Closed,
}

impl Live {
    async fn next(&mut self) -> Received {
        match self {
            Live::Here(updates) => match updates.recv().await {
                Ok(entry) => Received::Entry(entry),
                Err(RecvError::Lagged(_)) => Received::Lagged,
                Err(RecvError::Closed) => Received::Closed,
            },
            Live::Nats(updates) => match updates.next().await {
                Some(Some(entry)) => Received::Entry(entry),
                Some(None) => Received::Lagged,
                None => Received::Closed,
            },
        }
    }
}

/// Sends every stored entry after `last`, advancing it.
async fn catch_up(
    store: &dyn ControlPlaneStore,
    thread_id: &str,
    last: &mut i64,
    tx: &mpsc::Sender<ThreadUpdateRecord>,
) -> Result<(), Stop> {
    loop {
        let page = store
            .thread_updates(thread_id, *last, PAGE)
            .await
            .map_err(|e| {
                tracing::error!(thread = thread_id, error = %e, "cannot replay thread updates");
                Stop
            })?;
        if page.is_empty() {
            return Ok(());
        }
        for entry in page {
            *last = entry.seq;
            tx.send(entry).await.map_err(|_| Stop)?;
        }
    }
}

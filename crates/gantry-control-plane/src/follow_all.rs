//! Following every thread: the update log of all of them after a cursor,
//! in commit order, read from the store; then, each time a commit is
//! announced, what follows. Announcements are this process's broadcast of
//! what it committed and, among replicas, every replica's updates on
//! JetStream (`nats/updates.rs`): they only say "read again", so what a
//! follower sends always comes from the store, in the store's order, with
//! no gap and no duplicate, whichever replica wrote it.

use std::time::Duration;

use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::ControlPlane;
use crate::store::{ControlPlaneStore, LogCursor, LoggedUpdate};

/// Entries read from the store at a time.
const PAGE: i64 = 256;

/// Entries buffered for a follower that reads slower than they come.
const BUFFER: usize = 64;

/// How soon entries held back behind a running transaction (PostgreSQL)
/// are asked for again, when nothing is announced meanwhile.
const HELD_BACK_RETRY: Duration = Duration::from_millis(100);

/// The follower went away (or the store failed): stop following.
struct Stop;

impl ControlPlane {
    /// Where every thread's log ends now.
    pub(crate) async fn log_head(&self) -> Result<LogCursor, crate::error::ApiError> {
        self.inner.store.log_head().await.map_err(|e| {
            tracing::error!(error = %e, "cannot read the end of the update log");
            crate::error::ApiError::Unavailable("cannot read the update log right now".into())
        })
    }

    /// Every thread's updates after `after`, in commit order, then each new
    /// one, until the caller drops the stream or the control plane stops.
    pub(crate) fn follow_all(&self, after: LogCursor) -> ReceiverStream<LoggedUpdate> {
        let (tx, rx) = mpsc::channel(BUFFER);
        // Subscribed before the store is read: a commit announced meanwhile
        // only makes the follower read once more.
        let mut here = self.inner.tracker.subscribe();
        let mut announced = self.inner.announced.subscribe();
        let cp = self.clone();
        tokio::spawn(async move {
            let store = cp.inner.store.as_ref();
            let stop = &cp.inner.stop;
            let mut last = after;
            loop {
                let Ok(held_back) = catch_up(store, &mut last, &tx).await else {
                    return;
                };
                let retry = async {
                    if held_back {
                        tokio::time::sleep(HELD_BACK_RETRY).await;
                    } else {
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    received = here.recv() => {
                        if let Err(RecvError::Closed) = received {
                            return;
                        }
                        // One read covers every commit announced so far.
                        while !matches!(here.try_recv(), Err(TryRecvError::Empty | TryRecvError::Closed)) {}
                    }
                    changed = announced.changed() => {
                        if changed.is_err() {
                            return;
                        }
                    }
                    () = retry => {}
                    () = tx.closed() => return,
                    () = stop.cancelled() => return,
                }
            }
        });
        ReceiverStream::new(rx)
    }
}

/// Sends every readable entry after `last`, advancing it; whether entries
/// are held back (see [`crate::store::LogPage::held_back`]).
async fn catch_up(
    store: &dyn ControlPlaneStore,
    last: &mut LogCursor,
    tx: &mpsc::Sender<LoggedUpdate>,
) -> Result<bool, Stop> {
    loop {
        let page = store.log_after(*last, PAGE).await.map_err(|e| {
            tracing::error!(error = %e, "cannot read every thread's updates");
            Stop
        })?;
        let full = page.updates.len() >= usize::try_from(PAGE).unwrap_or(usize::MAX);
        for entry in page.updates {
            *last = entry.cursor;
            tx.send(entry).await.map_err(|_| Stop)?;
        }
        if !full {
            return Ok(page.held_back);
        }
    }
}

//! Following every thread: the update log of all of them after a cursor,
//! in commit order, read from the store, then what follows, with no gap
//! and no duplicate, whichever replica wrote it.
//!
//! One task per process, the tail, reads what follows for every follower:
//! each time a commit is announced (this process's broadcast of what it
//! committed and, among replicas, every replica's updates on JetStream:
//! `nats/updates.rs`) it reads the store after the last entry it read and
//! broadcasts the page, saying where it started. A follower takes a page
//! that starts at or before its own cursor; one that starts after it (the
//! follower fell behind, or the tail started after it) sends it to the
//! store for what lies between. So followers cost no store reads of their
//! own once caught up, however many there are.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::ControlPlane;
use crate::error::ApiError;
use crate::store::{ControlPlaneStore, LogCursor, LoggedUpdate};

/// Entries read from the store at a time.
const PAGE: i64 = 256;

/// Entries buffered for a follower that reads slower than they come.
const BUFFER: usize = 64;

/// Pages the tail keeps for followers that read slower than they come;
/// one that falls further behind reads the store.
const TAIL_PAGES: usize = 64;

/// How soon entries held back behind a running transaction (PostgreSQL)
/// are asked for again, when nothing is announced meanwhile.
const HELD_BACK_RETRY: Duration = Duration::from_millis(100);

/// What the tail read after `after`, in order.
#[derive(Debug, Clone)]
pub(crate) struct TailPage {
    after: LogCursor,
    updates: Arc<[LoggedUpdate]>,
}

/// The follower went away (or the store failed): stop following.
struct Stop;

impl ControlPlane {
    /// Where every thread's log ends now.
    pub(crate) async fn log_head(&self) -> Result<LogCursor, ApiError> {
        self.inner.store.log_head().await.map_err(|e| {
            tracing::error!(error = %e, "cannot read the end of the update log");
            ApiError::Unavailable("cannot read the update log right now".into())
        })
    }

    /// Every thread's updates after `after`, in commit order, then each new
    /// one, until the caller drops the stream or the control plane stops.
    pub(crate) fn follow_all(&self, after: LogCursor) -> ReceiverStream<LoggedUpdate> {
        let (tx, rx) = mpsc::channel(BUFFER);
        // Subscribed before the store is read: a page the tail reads
        // meanwhile is either already read here (and skipped) or after it.
        let mut pages = self.tail().subscribe();
        let cp = self.clone();
        tokio::spawn(async move {
            let store = cp.inner.store.as_ref();
            let mut last = after;
            if catch_up(store, &mut last, &tx).await.is_err() {
                return;
            }
            loop {
                let received = tokio::select! {
                    received = pages.recv() => received,
                    () = tx.closed() => return,
                    () = cp.inner.stop.cancelled() => return,
                };
                let sent = match received {
                    Ok(page) if page.after <= last => {
                        send_after(&page.updates, &mut last, &tx).await
                    }
                    // Entries lie between this follower and the page (or
                    // pages were missed): the store has them, and the page's.
                    Ok(_) | Err(RecvError::Lagged(_)) => catch_up(store, &mut last, &tx).await,
                    Err(RecvError::Closed) => return,
                };
                if sent.is_err() {
                    return;
                }
            }
        });
        ReceiverStream::new(rx)
    }

    /// The tail's pages, its task started on first use.
    fn tail(&self) -> &broadcast::Sender<TailPage> {
        self.inner.tail.get_or_init(|| {
            let (pages, _) = broadcast::channel(TAIL_PAGES);
            // Subscribed here, not in the task: no commit from now on goes
            // unannounced to it.
            let wakes = Wakes {
                here: self.inner.tracker.subscribe(),
                announced: self.inner.announced.subscribe(),
            };
            tokio::spawn(run_tail(self.clone(), pages.clone(), wakes));
            pages
        })
    }
}

/// What announces commits to the tail.
struct Wakes {
    /// What this process committed.
    here: broadcast::Receiver<crate::store::ThreadUpdateRecord>,
    /// What any replica published on JetStream.
    announced: tokio::sync::watch::Receiver<()>,
}

/// The tail: reads what follows the last entry it read each time a commit
/// is announced, while anyone follows, until the control plane stops.
async fn run_tail(cp: ControlPlane, pages: broadcast::Sender<TailPage>, wakes: Wakes) {
    let inner = &cp.inner;
    let Wakes {
        mut here,
        mut announced,
    } = wakes;
    // None while nobody follows: then it starts again from the log's end.
    let mut last: Option<LogCursor> = None;
    loop {
        let mut held_back = false;
        if pages.receiver_count() == 0 {
            last = None;
        } else {
            let after = match last {
                Some(after) => Ok(after),
                // Starting (again): what came before the log's end now is
                // unknown to the tail, so an empty page from there sends
                // every follower behind it to the store.
                None => inner.store.log_head().await.inspect(|head| {
                    let _ = pages.send(TailPage {
                        after: *head,
                        updates: Arc::from([]),
                    });
                }),
            };
            match after {
                Ok(after) => {
                    let (read_to, held) = read_tail(inner.store.as_ref(), after, &pages).await;
                    last = Some(read_to);
                    held_back = held;
                }
                // Tried again shortly: followers read the store meanwhile.
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the end of the update log");
                    held_back = true;
                }
            }
        }
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
            () = inner.stop.cancelled() => return,
        }
    }
}

/// Reads and broadcasts every readable page after `after`: where it got
/// to, and whether entries are held back. A failed read is logged and
/// tried again at the next announcement.
async fn read_tail(
    store: &dyn ControlPlaneStore,
    mut after: LogCursor,
    pages: &broadcast::Sender<TailPage>,
) -> (LogCursor, bool) {
    loop {
        let page = match store.log_after(after, PAGE).await {
            Ok(page) => page,
            Err(e) => {
                tracing::error!(error = %e, "cannot read every thread's updates");
                return (after, false);
            }
        };
        let full = page.updates.len() >= usize::try_from(PAGE).unwrap_or(usize::MAX);
        let Some(end) = page.updates.last().map(|u| u.cursor) else {
            return (after, page.held_back);
        };
        // No follower left is no error: the next read sees it.
        let _ = pages.send(TailPage {
            after,
            updates: page.updates.into(),
        });
        after = end;
        if !full {
            return (after, page.held_back);
        }
    }
}

/// Sends the entries of `updates` after `last`, advancing it.
async fn send_after(
    updates: &[LoggedUpdate],
    last: &mut LogCursor,
    tx: &mpsc::Sender<LoggedUpdate>,
) -> Result<(), Stop> {
    for entry in updates {
        if entry.cursor > *last {
            *last = entry.cursor;
            tx.send(entry.clone()).await.map_err(|_| Stop)?;
        }
    }
    Ok(())
}

/// Sends every readable entry after `last` from the store, advancing it.
async fn catch_up(
    store: &dyn ControlPlaneStore,
    last: &mut LogCursor,
    tx: &mpsc::Sender<LoggedUpdate>,
) -> Result<(), Stop> {
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
            return Ok(());
        }
    }
}

//! Thread updates on JetStream: the replica holding a runner publishes each
//! update it committed to `gantry.cp.threads.<thread>` (after the commit,
//! in commit order: a runner's batches are applied one at a time), with
//! the thread's seq as the message id so a repeat is dropped. A follower on
//! any replica reads the thread's subject live (`Follow`); what it misses
//! there (an update whose replica died before publishing it) is in the
//! store, which it reads when the seqs show a gap. Each replica also
//! watches every thread's subject: an update another replica wrote makes
//! it drop that thread from its memory, wakes the followers of every thread
//! (who read the store), and how far behind that watch is is the NATS lag
//! of `/metrics`. Each update is signed (`seal`): one without a replica's
//! signature is dropped, and its followers read the store instead.

use std::pin::Pin;
use std::sync::atomic::Ordering;

use async_nats::HeaderMap;
use async_nats::jetstream::consumer::{DeliverPolicy, push};
use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

use super::seal::Kind;
use super::{Cluster, STREAM, THREAD_SUBJECTS};
use crate::ControlPlane;
use crate::store::ThreadUpdateRecord;

/// The header naming the replica that wrote an update.
const REPLICA: &str = "Gantry-Replica";

/// The header of an update's signature.
const SIGNATURE: &str = "Gantry-Signature";

/// One update on the stream.
#[derive(Debug, Serialize, Deserialize)]
struct Update {
    thread_id: String,
    seq: i64,
    ts: i64,
    kind: String,
    data: String,
}

/// A thread's live updates from JetStream (`None` for one that cannot be
/// read: the follower then rereads the store).
pub(crate) type Follow = Pin<Box<dyn Stream<Item = Option<ThreadUpdateRecord>> + Send>>;

/// The subject token of a thread: its id when it is letters, digits, `-`
/// and `_` (every id this control plane makes), else `~` and its hex.
fn token(thread_id: &str) -> String {
    if !thread_id.is_empty()
        && thread_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        thread_id.to_owned()
    } else {
        format!("~{}", hex::encode(thread_id))
    }
}

/// The subject of a thread's updates.
fn subject(thread_id: &str) -> String {
    format!("gantry.cp.threads.{}", token(thread_id))
}

impl Cluster {
    /// Publishes committed updates, in order. A failure is logged: followers
    /// find what is missing in the store at the next update.
    pub(crate) async fn publish(&self, entries: &[ThreadUpdateRecord]) {
        for entry in entries {
            let update = Update {
                thread_id: entry.thread_id.clone(),
                seq: entry.seq,
                ts: entry.ts,
                kind: entry.kind.clone(),
                data: entry.data.clone(),
            };
            let Ok(body) = serde_json::to_vec(&update) else {
                continue;
            };
            let Some(seal) = self.seal() else { return };
            let to = subject(&entry.thread_id);
            let mut headers = HeaderMap::new();
            headers.insert(
                SIGNATURE,
                seal.sign(Kind::Update, &[to.as_bytes(), &body]).as_str(),
            );
            headers.insert(
                "Nats-Msg-Id",
                format!("{}:{}", token(&entry.thread_id), entry.seq).as_str(),
            );
            headers.insert(REPLICA, self.inner.replica.as_str());
            let published = self
                .inner
                .js
                .publish_with_headers(to, headers, body.into())
                .await;
            match published {
                // The ack is awaited aside: the next update need not wait.
                Ok(ack) => {
                    tokio::spawn(async move {
                        if let Err(e) = ack.await {
                            tracing::warn!(error = %e, "JetStream did not take a thread update; followers will read it from the store");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(thread = %entry.thread_id, seq = entry.seq, error = %e, "cannot publish a thread update; followers will read it from the store");
                }
            }
        }
    }

    /// The thread's updates published from now on.
    pub(crate) async fn follow(&self, thread_id: &str) -> Result<Follow, String> {
        let messages = self.consume(subject(thread_id)).await?;
        let thread_id = thread_id.to_owned();
        let cluster = self.clone();
        Ok(Box::pin(messages.map(move |message| {
            let message = message.map_err(|e| {
                tracing::debug!(error = %e, "thread updates from JetStream interrupted");
            });
            let update = message.ok().and_then(|m| cluster.signed_update(&m))?;
            (update.thread_id == thread_id).then_some(ThreadUpdateRecord {
                thread_id: update.thread_id,
                seq: update.seq,
                ts: update.ts,
                kind: update.kind,
                data: update.data,
            })
        })))
    }

    /// The update `message` carries, if a replica of this store signed it.
    fn signed_update(&self, message: &async_nats::jetstream::Message) -> Option<Update> {
        let seal = self.seal()?;
        let parts: [&[u8]; 2] = [message.subject.as_bytes(), &message.payload];
        let signed = message
            .headers
            .as_ref()
            .and_then(|h| h.get(SIGNATURE))
            .is_some_and(|signature| seal.verify(Kind::Update, &parts, signature.as_str()));
        if !signed {
            tracing::warn!(subject = %message.subject, "a thread update not signed by a replica of this store is ignored");
            return None;
        }
        serde_json::from_slice(&message.payload).ok()
    }

    /// An ordered consumer of `filter` from now on.
    async fn consume(&self, filter: String) -> Result<push::Ordered, String> {
        let consumer = self
            .inner
            .js
            .create_consumer_on_stream(
                push::OrderedConfig {
                    deliver_subject: self.inner.client.new_inbox(),
                    filter_subject: filter,
                    deliver_policy: DeliverPolicy::New,
                    ..push::OrderedConfig::default()
                },
                STREAM,
            )
            .await
            .map_err(|e| format!("cannot follow thread updates on JetStream: {e}"))?;
        consumer
            .messages()
            .await
            .map_err(|e| format!("cannot follow thread updates on JetStream: {e}"))
    }
}

/// Watches every thread's updates until the control plane stops: one
/// written by another replica drops the thread from this one's memory.
pub(super) async fn watch(cluster: Cluster, cp: ControlPlane) {
    let stop = cp.inner.stop.clone();
    while !stop.is_cancelled() {
        let mut messages = match cluster.consume(THREAD_SUBJECTS.to_owned()).await {
            Ok(messages) => messages,
            Err(e) => {
                tracing::warn!(error = %e, "trying again");
                tokio::select! {
                    () = tokio::time::sleep(std::time::Duration::from_secs(1)) => continue,
                    () = stop.cancelled() => return,
                }
            }
        };
        loop {
            let message = tokio::select! {
                message = messages.next() => message,
                () = stop.cancelled() => return,
            };
            let message = match message {
                Some(Ok(message)) => message,
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "watch of thread updates interrupted; watching again");
                    break;
                }
                None => break,
            };
            if let Ok(info) = message.info() {
                cluster.inner.lag.store(info.pending, Ordering::Relaxed);
            }
            // Any replica's commit: the followers of every thread read on.
            cp.inner.announced.send_replace(());
            let theirs = message
                .headers
                .as_ref()
                .and_then(|h| h.get(REPLICA))
                .is_none_or(|r| r.as_str() != cluster.inner.replica);
            if theirs && let Some(update) = cluster.signed_update(&message) {
                cp.inner.tracker.forget_thread(&update.thread_id);
            }
        }
    }
}

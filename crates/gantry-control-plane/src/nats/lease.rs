//! Runner leases: a replica whose channel to a runner opens writes
//! runner -> itself (with the runner's version and offers) in the runners
//! bucket, and deletes it when the channel closes if it is still its own.
//! A replica's own entry in the replicas bucket is renewed every few
//! seconds and expires after [`LEASE_TTL`] without renewal: a runner whose
//! replica's entry expired is gone. Every replica watches both buckets
//! into its registry, so routing asks nothing of NATS per request. A lease
//! is its signature (`seal`), a space, then its JSON: one that is not
//! signed by a replica of this store is ignored.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::kv::{Entry, Operation};
use bytes::Bytes;
use futures_util::StreamExt;
use gantry_runner_protocol::ProtocolVersion;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::seal::Kind;
use super::{Cluster, LEASE_TTL, RENEW_EVERY};
use crate::ControlPlane;
use crate::offers::SdkOffer;
use crate::registry::Remote;

/// A runner lease's value.
#[derive(Debug, Serialize, Deserialize)]
struct Lease {
    replica: String,
    protocol: String,
    #[serde(default)]
    offers: Vec<SdkOffer>,
}

impl Cluster {
    /// The runner's channel opened here: this replica holds it.
    pub(crate) async fn claim(
        &self,
        runner_id: &str,
        version: ProtocolVersion,
        offers: Vec<SdkOffer>,
    ) {
        let lease = Lease {
            replica: self.inner.replica.clone(),
            protocol: version.to_string(),
            offers,
        };
        let json = match serde_json::to_vec(&lease) {
            Ok(json) => json,
            Err(e) => {
                tracing::error!(runner = runner_id, error = %e, "cannot encode a runner lease");
                return;
            }
        };
        let Some(seal) = self.seal() else { return };
        let signature = seal.sign(Kind::Lease, &[runner_id.as_bytes(), &json]);
        let value = Bytes::from([signature.as_bytes(), b" ", &json].concat());
        // Until the put answers, no lease seen is newer than this one.
        self.held().insert(runner_id.to_owned(), u64::MAX);
        match self.inner.runners.put(runner_id, value).await {
            Ok(revision) => {
                self.held().insert(runner_id.to_owned(), revision);
            }
            Err(e) => {
                self.held().remove(runner_id);
                tracing::error!(runner = runner_id, error = %e, "cannot record the runner's lease in NATS; other replicas cannot reach it");
            }
        }
    }

    /// The lease in `value`, if a replica of this store signed it.
    fn signed_lease(&self, runner_id: &str, value: &[u8]) -> Result<Lease, String> {
        let seal = self.seal().ok_or("the replicas' secret is not loaded")?;
        let space = value.iter().position(|b| *b == b' ');
        let (signature, json) =
            space.map_or((&[][..], value), |at| (&value[..at], &value[at + 1..]));
        let signature = std::str::from_utf8(signature).unwrap_or_default();
        if !seal.verify(Kind::Lease, &[runner_id.as_bytes(), json], signature) {
            return Err("it is not signed by a replica of this store".into());
        }
        serde_json::from_slice(json).map_err(|e| format!("it is unreadable: {e}"))
    }

    /// Whether a lease written at `revision` by another replica is newer
    /// than this replica's own of the runner (which it then forgets).
    fn superseded(&self, runner_id: &str, revision: u64) -> bool {
        let mut held = self.held();
        if held.get(runner_id).is_some_and(|own| *own < revision) {
            held.remove(runner_id);
            return true;
        }
        false
    }

    /// The runner's channel here closed: its lease goes, unless another
    /// replica has taken it meanwhile (then its revision moved on).
    pub(crate) async fn release(&self, runner_id: &str) {
        let Some(revision) = self.held().remove(runner_id) else {
            return;
        };
        if let Err(e) = self
            .inner
            .runners
            .delete_expect_revision(runner_id, Some(revision))
            .await
        {
            tracing::debug!(runner = runner_id, error = %e, "runner lease not released (another replica holds it now)");
        }
    }
}

/// Renews this replica's lease until the control plane stops, then deletes
/// it (the others learn at once that its runners are gone).
pub(super) async fn keep_alive(cluster: Cluster, cp: ControlPlane) {
    let replicas = &cluster.inner.replicas;
    let me = cluster.inner.replica.clone();
    let stop = cp.inner.stop.clone();
    loop {
        if let Err(e) = replicas.put(&me, Bytes::from_static(b"{}")).await {
            tracing::warn!(error = %e, "cannot renew this replica's lease in NATS");
        }
        tokio::select! {
            () = tokio::time::sleep(RENEW_EVERY) => {}
            () = stop.cancelled() => break,
        }
    }
    if let Err(e) = replicas.delete(&me).await {
        tracing::debug!(error = %e, "cannot delete this replica's lease");
    }
}

/// Follows the replicas bucket: which replicas are alive, and until when.
pub(super) async fn watch_replicas(cluster: Cluster, cp: ControlPlane) {
    let me = cluster.inner.replica.clone();
    watch(&cluster.inner.replicas, &cp, |entry| {
        if entry.key == me {
            return;
        }
        let registry = &cp.inner.registry;
        match entry.operation {
            Operation::Put => registry.replica_alive(&entry.key, alive_until(&entry)),
            Operation::Delete | Operation::Purge => registry.replica_gone(&entry.key),
        }
    })
    .await;
}

/// Follows the runners bucket: which replica holds each runner.
pub(super) async fn watch_runners(cluster: Cluster, cp: ControlPlane) {
    let me = cluster.inner.replica.clone();
    watch(&cluster.inner.runners, &cp, |entry| {
        let inner = &cp.inner;
        let lease = match entry.operation {
            Operation::Put => match cluster.signed_lease(&entry.key, &entry.value) {
                Ok(lease) => Some(lease),
                Err(why) => {
                    tracing::warn!(runner = %entry.key, why, "runner lease ignored");
                    return;
                }
            },
            Operation::Delete | Operation::Purge => None,
        };
        match lease {
            Some(lease) if lease.replica != me => {
                // Another replica writes this runner's threads from now on.
                inner.tracker.forget_runner(&entry.key);
                if cluster.superseded(&entry.key, entry.revision) {
                    // The runner connected there after it did here: the
                    // channel here died unseen, and must not take requests.
                    tracing::info!(runner = %entry.key, replica = %lease.replica, "runner moved to another replica; its old channel here is dropped");
                    inner.registry.drop_channel(&entry.key);
                }
                let version = lease.protocol.parse().unwrap_or_default();
                let remote = Remote {
                    replica: lease.replica,
                    version,
                };
                inner
                    .registry
                    .set_remote(&entry.key, Some((remote, lease.offers)));
            }
            _ => inner.registry.set_remote(&entry.key, None),
        }
    })
    .await;
}

/// Calls `seen` with every entry of `bucket` (the latest of each key, then
/// each change), watching again when the watch breaks, until the control
/// plane stops.
async fn watch(
    bucket: &async_nats::jetstream::kv::Store,
    cp: &ControlPlane,
    mut seen: impl FnMut(Entry),
) {
    let stop = &cp.inner.stop;
    while !stop.is_cancelled() {
        // The latest entry of every key first (`watch_all` would start
        // with what changes from now on), then each change.
        let mut entries = match bucket.watch_with_history(">").await {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch a NATS KV bucket; trying again");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    () = stop.cancelled() => return,
                }
            }
        };
        loop {
            let entry = tokio::select! {
                entry = entries.next() => entry,
                () = stop.cancelled() => return,
            };
            match entry {
                Some(Ok(entry)) => seen(entry),
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "NATS KV watch failed; watching again");
                    break;
                }
                None => break,
            }
        }
    }
}

/// Until when a replica whose lease entry is `entry` is alive: its TTL
/// from when it was written (by the server's clock, read against ours).
fn alive_until(entry: &Entry) -> Instant {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let written = u128::try_from(entry.created.unix_timestamp_nanos()).unwrap_or(0);
    let age = Duration::from_nanos(u64::try_from(now.saturating_sub(written)).unwrap_or(u64::MAX));
    (Instant::now() + LEASE_TTL)
        .checked_sub(age)
        .unwrap_or_else(Instant::now)
}

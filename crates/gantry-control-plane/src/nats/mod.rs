//! Replicas over NATS: several control-plane processes share one store and
//! a NATS server with JetStream, and nothing else.
//!
//! - `lease`: which replica holds each runner's channel (a KV bucket of
//!   runner -> replica), and which replicas are alive (a KV bucket whose
//!   entries expire unless renewed): a dead replica's runners are gone.
//! - `rpc`: a request for a runner held elsewhere goes to its replica over
//!   request/reply (`gantry.cp.<replica>.rpc`), which sends it on the
//!   channel and answers with the runner's reply or the API error.
//! - `seal`: each of those messages is signed with a secret the replicas
//!   keep in their shared store, so a NATS client is not a replica.
//! - `updates`: every thread update the holding replica commits is
//!   published to JetStream (`gantry.cp.threads.<thread>`); every replica's
//!   live followers read it there, and each replica drops from its memory
//!   what others wrote.
//!
//! The leases live in NATS KV rather than in the store: they only matter
//! when replicas route through NATS, KV entries expire on the server by
//! themselves (no sweeper, no clock of ours), and every replica learns of a
//! change by watching the bucket instead of asking on each request.

mod lease;
mod rpc;
mod seal;
mod updates;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};

pub(crate) use rpc::Call;
pub(crate) use updates::Follow;

use crate::ControlPlane;
use crate::store::{ControlPlaneStore, StoreError};
use seal::Seal;

/// How long a replica's lease lasts unless renewed: a replica killed
/// without a goodbye holds its runners this long at most.
pub const LEASE_TTL: Duration = Duration::from_secs(10);

/// How often a replica renews its lease.
const RENEW_EVERY: Duration = Duration::from_secs(3);

/// The stream of thread updates.
const STREAM: &str = "GANTRY_CP_THREADS";

/// Subjects of thread updates: `gantry.cp.threads.<thread>`.
const THREAD_SUBJECTS: &str = "gantry.cp.threads.>";

/// How long the stream keeps an update: it carries them live, the store
/// keeps them for good (a follower further behind reads the store).
const STREAM_MAX_AGE: Duration = Duration::from_secs(3600);

/// Bucket of runner -> the replica holding its channel.
const RUNNERS_BUCKET: &str = "gantry-cp-runners";

/// Bucket of live replicas (entries expire after [`LEASE_TTL`]).
const REPLICAS_BUCKET: &str = "gantry-cp-replicas";

/// Why the control plane cannot run with NATS.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The replica id cannot name a subject.
    #[error(
        "replica id {0:?}: use letters, digits, `-` and `_` only (it names NATS subjects and keys)"
    )]
    ReplicaId(String),
    /// The server cannot be reached.
    #[error("cannot connect to NATS at {url}: {why}")]
    Connect {
        /// The URL given.
        url: String,
        /// Why.
        why: String,
    },
    /// JetStream (the stream or a bucket) cannot be set up.
    #[error("NATS JetStream at {url}: {why} (is the server started with JetStream, `-js`?)")]
    JetStream {
        /// The URL given.
        url: String,
        /// Why.
        why: String,
    },
}

/// This replica's connection to NATS: cheap to clone.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    client: async_nats::Client,
    js: jetstream::Context,
    replica: String,
    runners: kv::Store,
    replicas: kv::Store,
    /// Revisions of the runner leases this replica wrote, by runner.
    held: Mutex<HashMap<String, u64>>,
    /// Updates on the stream not yet delivered to this replica's watcher.
    lag: AtomicU64,
    /// Signs and checks what replicas tell each other (set at start).
    seal: OnceLock<Seal>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("replica", &self.inner.replica)
            .finish()
    }
}

/// `url` with any user, password or token replaced by `***`: a NATS URL's
/// user part alone is a token, so none of it may reach an error or a log.
fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://***@{host}{}", &rest[authority_end..]),
        None => url.to_owned(),
    }
}

impl Cluster {
    /// Connects to NATS at `url` as replica `replica` (a new id when
    /// `None`), and sets up the stream and buckets the replicas share.
    pub async fn connect(url: &str, replica: Option<String>) -> Result<Self, ClusterError> {
        let replica = replica.unwrap_or_else(|| uuid::Uuid::now_v7().simple().to_string());
        if replica.is_empty()
            || !replica
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(ClusterError::ReplicaId(replica));
        }
        let client = async_nats::ConnectOptions::new()
            .name(format!("gantry-control-plane {replica}"))
            .connect(url)
            .await
            .map_err(|e| ClusterError::Connect {
                url: without_credentials(url),
                why: e.to_string(),
            })?;
        let js = jetstream::new(client.clone());
        let failed = |why: String| ClusterError::JetStream {
            url: without_credentials(url),
            why,
        };
        js.get_or_create_stream(stream::Config {
            name: STREAM.to_owned(),
            subjects: vec![THREAD_SUBJECTS.to_owned()],
            max_age: STREAM_MAX_AGE,
            duplicate_window: Duration::from_secs(120),
            ..stream::Config::default()
        })
        .await
        .map_err(|e| failed(format!("stream {STREAM}: {e}")))?;
        let runners = bucket(&js, RUNNERS_BUCKET, Duration::ZERO)
            .await
            .map_err(&failed)?;
        let replicas = bucket(&js, REPLICAS_BUCKET, LEASE_TTL)
            .await
            .map_err(&failed)?;
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                js,
                replica,
                runners,
                replicas,
                held: Mutex::default(),
                lag: AtomicU64::new(0),
                seal: OnceLock::new(),
            }),
        })
    }

    /// This replica's id.
    pub fn replica(&self) -> &str {
        &self.inner.replica
    }

    /// Whether the connection to NATS is up (readiness).
    pub(crate) fn is_connected(&self) -> bool {
        self.inner.client.connection_state() == async_nats::connection::State::Connected
    }

    /// Updates on the stream not yet delivered to this replica.
    pub(crate) fn lag(&self) -> u64 {
        self.inner.lag.load(Ordering::Relaxed)
    }

    fn held(&self) -> MutexGuard<'_, HashMap<String, u64>> {
        // Every change under the lock is one insert or remove.
        self.inner
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes the secret the replicas sharing `store` sign with (making it
    /// when this replica is the first).
    pub(crate) async fn seal_with(&self, store: &dyn ControlPlaneStore) -> Result<(), StoreError> {
        let candidate = seal::new_secret().map_err(StoreError::Database)?;
        let secret = store.cluster_secret(&candidate).await?;
        // A second call keeps the first seal: the secret is the store's.
        let _ = self.inner.seal.set(Seal::new(&secret));
        Ok(())
    }

    /// What signs and checks this replica's messages. Set before
    /// [`Cluster::start`]; a cluster never started refuses every message.
    fn seal(&self) -> Option<&Seal> {
        self.inner.seal.get()
    }

    /// Starts what runs beside the control plane until it stops: the
    /// lease's renewal, the watches of both buckets, the RPC server and the
    /// stream's watcher.
    pub(crate) fn start(&self, cp: &ControlPlane) {
        tokio::spawn(lease::keep_alive(self.clone(), cp.clone()));
        tokio::spawn(lease::watch_replicas(self.clone(), cp.clone()));
        tokio::spawn(lease::watch_runners(self.clone(), cp.clone()));
        tokio::spawn(rpc::serve(self.clone(), cp.clone()));
        tokio::spawn(updates::watch(self.clone(), cp.clone()));
    }
}

/// The KV bucket `name`, created if missing (entries expire after
/// `max_age` unless it is zero). Its stream is made as the client library
/// would, by hand: the library's own creation first reads the account's
/// info, which NATS 2.9 (Debian's) answers in a shape it does not parse.
async fn bucket(
    js: &jetstream::Context,
    name: &str,
    max_age: Duration,
) -> Result<kv::Store, String> {
    if let Ok(store) = js.get_key_value(name).await {
        return Ok(store);
    }
    js.get_or_create_stream(stream::Config {
        name: format!("KV_{name}"),
        subjects: vec![format!("$KV.{name}.>")],
        max_messages_per_subject: 1,
        max_age,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        discard: stream::DiscardPolicy::New,
        num_replicas: 1,
        ..stream::Config::default()
    })
    .await
    .map_err(|e| format!("bucket {name}: {e}"))?;
    js.get_key_value(name)
        .await
        .map_err(|e| format!("bucket {name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::without_credentials;

    #[test]
    fn credentials_in_a_nats_url_never_show() {
        assert_eq!(
            without_credentials("nats://s3cr3t-token@10.0.0.1:4222"),
            "nats://***@10.0.0.1:4222"
        );
        assert_eq!(
            without_credentials("nats://user:pa55@nats.internal:4222/x"),
            "nats://***@nats.internal:4222/x"
        );
        assert_eq!(
            without_credentials("nats://127.0.0.1:4222"),
            "nats://127.0.0.1:4222"
        );
    }
}

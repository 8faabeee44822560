//! Gantry's own control plane: the server side of
//! `companyhelm.runner.v1.AgentRunnerControlService`, which runners dial,
//! and a JSON API over HTTP for users, which creates agents and threads on
//! the runners, sends messages, and follows threads live.
//!
//! - `auth`: runners authenticate with bearer tokens of which only the
//!   SHA-256 is stored ([`add_runner`] mints one); `api_tokens`: the same
//!   for the HTTP API's users ([`create_api_token`]).
//! - `registry`: connected runners and what they offer.
//! - `dispatch`: requests over a runner's channel, answered by `request_id`,
//!   re-sent after a reconnect, abandoned after a timeout.
//! - `tracking`: runners' updates applied to agents, threads, turns and
//!   items, each thread change appended to the thread's log and broadcast.
//! - `ops`: what the API does; `http`: its routes; `service`: the gRPC side.
//! - [`github`]: the GitHub App that mints installation tokens for runners.
//! - [`store`]: where all of it is kept.
//! - `nats`: replicas ([`Cluster`]): which replica holds each runner, requests
//!   routed to it, thread updates on JetStream for every replica's followers.
//!
//! State lives in a [`ControlPlaneStore`] (SQLite by default, or PostgreSQL,
//! which replicas share), so a restart keeps runners, agents, threads and
//! history; runners reconnect by themselves.
//!
//! The control plane keeps no engine: runners dial it over gRPC
//! (`gantry-runner-protocol`), and it depends on no crate of the engine's.

mod api_tokens;
mod auth;
mod choose;
mod dispatch;
mod error;
mod follow;
mod follow_all;
pub mod github;
mod http;
mod liveness;
mod metrics;
mod nats;
mod offers;
mod ops;
mod probes;
mod registry;
mod requests;
mod serve;
mod service;
pub mod store;
mod tracking;
mod views;
mod wire;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

pub use api_tokens::{ApiTokenError, create_api_token, revoke_api_token};
pub use auth::{AddRunnerError, RunnerIdentity, add_runner};
pub use gantry_runner_protocol::ProtocolVersion;
pub use nats::{Cluster, ClusterError, LEASE_TTL};
pub use offers::{ModelOffer, SdkOffer};
pub use serve::{ServeError, serve};
pub use service::ControlService;
pub use wire::RunnerService;

use crate::github::GithubInstallations;
use crate::store::{
    ApiTokenRecord, ControlPlaneStore, RunnerRecord, SqliteControlPlaneStore, StoreError,
};

/// How long a runner gets to answer a request by default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The default gRPC listen address (runners dial it).
pub const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:7400";

/// The default HTTP listen address (users call it).
pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:7401";

/// How often the control plane asks a 0.7.0 runner for a heartbeat, by
/// default (one that misses two in a row is unhealthy).
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(10);

/// How long a stopping control plane waits for requests in flight to be
/// answered before it closes runner channels, by default.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(10);

/// How often the control plane pings a runner's connection (HTTP/2 PING),
/// and how long it waits for the answer before closing it, by default.
pub const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(15);

/// How the control plane behaves.
#[derive(Clone)]
pub struct ControlPlaneOptions {
    /// How long a runner gets to answer a request (pending requests are
    /// re-sent when the runner reconnects within it).
    pub request_timeout: Duration,
    /// The GitHub App that mints installation tokens for runners; without
    /// one, the GitHub rpcs answer `UNIMPLEMENTED`.
    pub github: Option<Arc<dyn GithubInstallations>>,
    /// Host names the HTTP API answers to besides the listen address's
    /// (and the loopback names when it listens on loopback).
    pub allowed_hosts: Vec<String>,
    /// Runner connections are pinged this often and closed when a ping is
    /// not answered within as long: a dead runner's channel ends, so the
    /// runner can connect again (a live one's second connection is refused).
    pub keepalive: Duration,
    /// How often 0.7.0 runners are asked for a heartbeat; one that misses
    /// two in a row is marked unhealthy and gets no new work.
    pub heartbeat: Duration,
    /// On a stop, how long requests in flight get to be answered (no new
    /// runner is taken meanwhile) before runner channels close.
    pub drain: Duration,
    /// With replicas: this replica's connection to NATS, through which
    /// requests reach runners held by other replicas and thread updates
    /// reach every replica's followers. `None`: one process, in-process bus.
    pub cluster: Option<Cluster>,
}

impl Default for ControlPlaneOptions {
    fn default() -> Self {
        Self {
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            github: None,
            allowed_hosts: Vec::new(),
            keepalive: DEFAULT_KEEPALIVE,
            heartbeat: DEFAULT_HEARTBEAT,
            drain: DEFAULT_DRAIN,
            cluster: None,
        }
    }
}

impl std::fmt::Debug for ControlPlaneOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlaneOptions")
            .field("request_timeout", &self.request_timeout)
            .field("github", &self.github.is_some())
            .field("allowed_hosts", &self.allowed_hosts)
            .field("keepalive", &self.keepalive)
            .field("heartbeat", &self.heartbeat)
            .field("drain", &self.drain)
            .field("cluster", &self.cluster)
            .finish()
    }
}

/// The control plane: cheap to clone, every clone is the same one.
#[derive(Clone)]
pub struct ControlPlane {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn ControlPlaneStore>,
    tokens: auth::Tokens,
    registry: registry::Registry,
    dispatcher: dispatch::Dispatcher,
    tracker: tracking::Tracker,
    github: Option<Arc<dyn GithubInstallations>>,
    allowed_hosts: Vec<String>,
    keepalive: Duration,
    heartbeat: Duration,
    drain: Duration,
    metrics: metrics::Metrics,
    cluster: Option<Cluster>,
    /// Bumped for every thread update a replica announces on JetStream:
    /// wakes the followers of every thread (`follow_all.rs`).
    announced: tokio::sync::watch::Sender<()>,
    /// The pages of every thread's log the tail reads for all followers
    /// (`follow_all.rs`), once someone follows.
    tail: std::sync::OnceLock<tokio::sync::broadcast::Sender<follow_all::TailPage>>,
    /// Bumped when this process created, deleted or changed an agent (a
    /// hint on `GET /v1/events`: agents are in no thread's log).
    agents_changed: tokio::sync::watch::Sender<()>,
    /// Cancelled when a stop begins: no new runner channel is taken.
    draining: CancellationToken,
    /// Cancelled by [`ControlPlane::shutdown`]: ends channels and live streams.
    stop: CancellationToken,
}

impl ControlPlane {
    /// A control plane over `store`, knowing its runners and what they
    /// offered when they last registered.
    pub async fn open(
        store: Arc<dyn ControlPlaneStore>,
        options: ControlPlaneOptions,
    ) -> Result<Self, StoreError> {
        let tokens = auth::Tokens::load(store.clone()).await?;
        if let Some(cluster) = &options.cluster {
            cluster.seal_with(store.as_ref()).await?;
        }
        let registry = registry::Registry::default();
        for runner in store.runners().await? {
            registry.set_offers(&runner.id, offers::parse(&runner.sdks));
        }
        let cp = Self {
            inner: Arc::new(Inner {
                tracker: tracking::Tracker::new(store.clone(), options.cluster.clone()),
                store,
                tokens,
                registry,
                dispatcher: dispatch::Dispatcher::new(options.request_timeout),
                github: options.github,
                allowed_hosts: options.allowed_hosts,
                keepalive: options.keepalive,
                heartbeat: options.heartbeat,
                drain: options.drain,
                metrics: metrics::Metrics::default(),
                cluster: options.cluster,
                announced: tokio::sync::watch::Sender::new(()),
                tail: std::sync::OnceLock::new(),
                agents_changed: tokio::sync::watch::Sender::new(()),
                draining: CancellationToken::new(),
                stop: CancellationToken::new(),
            }),
        };
        if let Some(cluster) = &cp.inner.cluster {
            cluster.start(&cp);
        }
        Ok(cp)
    }

    /// A control plane over `control-plane.db` in `data_dir`.
    pub async fn open_in(
        data_dir: &Path,
        options: ControlPlaneOptions,
    ) -> Result<Self, StoreError> {
        let store = SqliteControlPlaneStore::open_in(data_dir).await?;
        Self::open(Arc::new(store), options).await
    }

    /// Adds a runner whose protocol version is detected at registration;
    /// returns it with its token, shown this once.
    pub async fn add_runner(&self, name: &str) -> Result<(RunnerRecord, String), AddRunnerError> {
        self.add_runner_pinned(name, None).await
    }

    /// Adds a runner, pinned to a protocol version when given; returns it
    /// with its token, shown this once.
    pub async fn add_runner_pinned(
        &self,
        name: &str,
        protocol: Option<ProtocolVersion>,
    ) -> Result<(RunnerRecord, String), AddRunnerError> {
        let added = add_runner(self.inner.store.as_ref(), name, protocol).await?;
        self.inner.tokens.reload().await?;
        Ok(added)
    }

    /// The gRPC service runners dial, in either protocol version.
    pub fn grpc_service(&self) -> RunnerService {
        RunnerService::new(ControlService::new(self.clone()))
    }

    /// Creates an HTTP API token, which may only read (`GET`, `HEAD`) when
    /// `read_only`; returns it with the token, shown this once.
    pub async fn create_api_token(
        &self,
        name: &str,
        read_only: bool,
    ) -> Result<(ApiTokenRecord, String), ApiTokenError> {
        create_api_token(self.inner.store.as_ref(), name, read_only).await
    }

    /// Whether any HTTP API token exists (then every call needs one).
    pub async fn has_api_tokens(&self) -> Result<bool, StoreError> {
        Ok(!self.inner.store.api_tokens().await?.is_empty())
    }

    /// The HTTP JSON API (and its OpenAPI document at `/openapi.json`) as
    /// served on `listen`: the address decides the names it answers to and
    /// whether it may run without tokens (see the README).
    pub fn http_router(&self, listen: SocketAddr) -> axum::Router {
        let access = http::access(listen, &self.inner.allowed_hosts);
        http::router(self.clone(), access).merge(probes::router(self.clone()))
    }

    /// What the runners page shows changed: a runner or an agent (which
    /// are in no thread's log). Wakes once per change seen, coalesced.
    pub(crate) fn watch_directory(&self) -> [tokio::sync::watch::Receiver<()>; 2] {
        [
            self.inner.registry.watch(),
            self.inner.agents_changed.subscribe(),
        ]
    }

    /// Cancelled when the control plane stops: live streams end with it.
    pub(crate) fn stopping(&self) -> CancellationToken {
        self.inner.stop.clone()
    }

    /// Whether a stop has begun ([`ControlPlane::drain`]).
    pub fn is_draining(&self) -> bool {
        self.inner.draining.is_cancelled()
    }

    /// Begins a stop: new runner channels are refused (their runners move
    /// to another replica), `/readyz` answers 503, and this waits until no
    /// request is in flight or the drain time is up. Then
    /// [`ControlPlane::shutdown`] closes what is left.
    pub async fn drain(&self) {
        self.inner.draining.cancel();
        let idle = self.inner.dispatcher.idle();
        if tokio::time::timeout(self.inner.drain, idle).await.is_err() {
            tracing::warn!(
                in_flight = self.inner.dispatcher.in_flight(),
                "requests still in flight at the end of the drain"
            );
        }
    }

    /// Closes every runner channel and live thread stream, so servers can
    /// stop; pending requests fail with their timeout.
    pub fn shutdown(&self) {
        self.inner.stop.cancel();
        self.inner.registry.close_all();
    }
}

/// Now, in milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

//! Gantry's own HTTP API, v1: the engine's threads, turns, approvals and
//! catalog as JSON resources under `/v1`, their events live over
//! Server-Sent Events, an OpenAPI 3.1 document generated from the types at
//! `/openapi.json`, and a web dashboard at `/` (static files built into the
//! binary). `gantry serve --http-addr` serves it beside the other
//! protocols, on the same engine.
//!
//! Errors have one shape, `{"error": {"code", "message", "details"}}`
//! ([`error`]); who may call is checked first ([`guard`]); tokens are made
//! by `gantry tokens create` ([`tokens`]).

mod dashboard;
pub mod error;
mod extract;
mod guard;
mod metrics;
mod openapi;
mod router;
mod routes;
mod sse;
pub mod tokens;
pub mod views;

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use gantry_core::Engine;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use openapi::document as openapi_document;
pub use router::router;
pub use tokens::Tokens;

/// The API's default address.
pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:4080";

/// What the routes share.
#[derive(Clone)]
pub(crate) struct AppState {
    pub engine: Engine,
    /// Where threads that name no workspace go.
    pub workspace: Arc<PathBuf>,
    pub tokens: Arc<Tokens>,
    pub access: Arc<gantry_web::guard::Access>,
    /// Ends live streams when the server stops.
    pub stop: CancellationToken,
    /// What the engine did since the server started, for `/metrics`.
    pub metrics: Arc<metrics::Metrics>,
}

/// How the API is served.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Threads that name no workspace use this directory.
    pub workspace: PathBuf,
    /// The API tokens (see [`Tokens`]).
    pub tokens: Tokens,
    /// Host names (`name` or `name:port`) the API answers to besides its
    /// listen address (and, on loopback, `localhost`).
    pub allowed_hosts: Vec<String>,
}

/// Serves the API over `engine` on `listener` until `stop` is cancelled;
/// live streams end then, and the server returns once open requests are
/// answered.
pub async fn serve(
    engine: Engine,
    listener: TcpListener,
    options: HttpOptions,
    stop: CancellationToken,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let addr: SocketAddr = listener.local_addr()?;
    let app = router(engine, addr, options, stop.clone());
    let listener = listener.tap_io(|tcp| {
        // Deltas are small and each matters now: no Nagle delay.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(stop.cancelled_owned())
        .into_future()
        .await
}

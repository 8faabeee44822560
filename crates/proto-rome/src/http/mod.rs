//! Rome's runner over HTTP: `POST /v1/rome/run` and `/v1/rome/fork`
//! (NDJSON streams), `POST /v1/rome/turns/{turnId}/interrupt`,
//! `GET /v1/rome/agents/{name}` and `/v1/rome/agents/{name}/actions/{action}`,
//! and `GET /healthz` without auth. The guard (host, origin, token: `guard.rs`) runs first; body errors are axum's
//! `Json` rejections (400, 415, 422, as text).

mod guard;
mod handlers;

use std::future::IntoFuture;

use axum::Router;
use axum::routing::{get, post};
use gantry_web::guard::{Access, OneToken};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::Rome;

/// What the routes share.
#[derive(Clone)]
pub(crate) struct AppState {
    pub rome: Rome,
    /// Host, origin and token checks, before any route.
    pub guard: OneToken,
    /// Ends open streams when the server stops.
    pub stop: CancellationToken,
}

/// The routes over `rome`, every one behind `guard` (which lets
/// `/healthz` through without a token); open streams end when `stop` is
/// cancelled.
pub fn router(rome: Rome, guard: OneToken, stop: CancellationToken) -> Router {
    let state = AppState { rome, guard, stop };
    let protected = Router::new()
        .route("/v1/rome/run", post(handlers::run))
        .route("/v1/rome/fork", post(handlers::fork))
        .route("/v1/rome/turns/{turn}/interrupt", post(handlers::interrupt))
        .route("/v1/rome/agents/{name}", get(handlers::agent))
        .route(
            "/v1/rome/agents/{name}/actions/{action}",
            get(handlers::action),
        );
    Router::new()
        .route("/healthz", get(handlers::healthz))
        .merge(protected)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::guard,
        ))
        .with_state(state)
}

/// Serves `rome` on `listener` (answering to its address and
/// `allowed_hosts`; `token`, when given, needed on every route but
/// `/healthz`) until `stop` is cancelled; open streams end
/// then, and the server returns once open requests are answered.
pub async fn serve_http(
    rome: Rome,
    listener: TcpListener,
    token: Option<String>,
    allowed_hosts: Vec<String>,
    stop: CancellationToken,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let guard = OneToken::new(Access::new(listener.local_addr()?, &allowed_hosts), token);
    let app = router(rome, guard, stop.clone());
    let listener = listener.tap_io(|tcp| {
        // Each line matters now: no Nagle delay.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(stop.cancelled_owned())
        .into_future()
        .await
}

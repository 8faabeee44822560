//! Rome's runner over HTTP: `POST /v1/rome/run` and `/v1/rome/fork`
//! (NDJSON streams), `POST /v1/rome/turns/{turnId}/interrupt`,
//! `GET /v1/rome/agents/{name}` and `/v1/rome/agents/{name}/actions/{action}`,
//! and `GET /healthz` without auth. Auth runs first; body errors are axum's
//! `Json` rejections (400, 415, 422, as text).

mod auth;
mod handlers;

use std::future::IntoFuture;
use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::Rome;

/// What the routes share.
#[derive(Clone)]
pub(crate) struct AppState {
    pub rome: Rome,
    /// The bearer token every protected route needs (none: open).
    pub token: Option<Arc<str>>,
    /// Ends open streams when the server stops.
    pub stop: CancellationToken,
}

/// The routes over `rome`; `token` protects all but `/healthz`; open
/// streams end when `stop` is cancelled.
pub fn router(rome: Rome, token: Option<String>, stop: CancellationToken) -> Router {
    let state = AppState {
        rome,
        token: token.map(Arc::from),
        stop,
    };
    let protected = Router::new()
        .route("/v1/rome/run", post(handlers::run))
        .route("/v1/rome/fork", post(handlers::fork))
        .route("/v1/rome/turns/{turn}/interrupt", post(handlers::interrupt))
        .route("/v1/rome/agents/{name}", get(handlers::agent))
        .route(
            "/v1/rome/agents/{name}/actions/{action}",
            get(handlers::action),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ));
    Router::new()
        .route("/healthz", get(handlers::healthz))
        .merge(protected)
        .with_state(state)
}

/// Serves `rome` on `listener` until `stop` is cancelled; open streams end
/// then, and the server returns once open requests are answered.
pub async fn serve_http(
    rome: Rome,
    listener: TcpListener,
    token: Option<String>,
    stop: CancellationToken,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let app = router(rome, token, stop.clone());
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

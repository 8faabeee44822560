//! CodeWhale over HTTP: `POST /thread`, `/app`, `/prompt`, `GET /jobs`,
//! `POST /mcp/startup` as the real app-server answers them (judged against
//! its recorded answers by conformance/codewhale/test_diff.py), `GET
//! /healthz` without auth, and what Gantry
//! adds for a client of a real agent: a running thread's frames over SSE
//! (`GET /thread/{id}/events`), MCP servers' startup over SSE (`GET
//! /events`), answers to approvals and interrupts.
//!
//! Body errors are axum's `Json` rejections, which are CodeWhale's: 400
//! (not JSON), 422 (a missing or unknown `kind` or field), 415 (no
//! `Content-Type: application/json`), as `text/plain`; unknown paths 404
//! and wrong methods 405 with empty bodies. The guard (host, origin, token: `guard.rs`) runs first.

mod guard;
mod handlers;
mod sse;
mod v0_10;

use std::future::IntoFuture;

use axum::Router;
use axum::routing::{get, post};
use gantry_web::guard::{Access, OneToken};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::{CodeWhale, Version};

/// CodeWhale's default address.
pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8787";

/// What the HTTP routes share.
#[derive(Clone)]
pub(crate) struct AppState {
    pub cw: CodeWhale,
    /// Host, origin and token checks, before any route.
    pub guard: OneToken,
    /// Ends live streams when the server stops.
    pub stop: CancellationToken,
    /// The CodeWhale it speaks.
    pub version: Version,
}

/// The routes of `version` over `cw`, every one behind `guard` (which lets
/// `/healthz` through without a token); live streams end when `stop` is
/// cancelled.
pub fn router(cw: CodeWhale, version: Version, guard: OneToken, stop: CancellationToken) -> Router {
    let state = AppState {
        cw,
        guard,
        stop,
        version,
    };
    let protocol = match version {
        Version::V0_8 => Router::new()
            .route("/thread", post(handlers::thread))
            .route("/app", post(handlers::app))
            .route("/prompt", post(handlers::prompt))
            .route("/jobs", get(handlers::jobs))
            .route("/mcp/startup", post(handlers::mcp_startup)),
        Version::V0_10 => Router::new()
            .route("/thread", post(v0_10::thread))
            .route("/app", post(v0_10::app))
            .route("/prompt", post(v0_10::prompt))
            .route("/v1/chat/completions", post(v0_10::chat_completions))
            .route(
                "/v1/user-input/{thread_id}/{request_id}",
                post(v0_10::user_input),
            ),
    };
    let protected = protocol
        .route("/thread/{id}/events", get(sse::follow))
        .route("/events", get(sse::engine_wide))
        .route(
            "/thread/{id}/approvals/{approval_id}",
            post(handlers::approval),
        )
        .route("/thread/{id}/interrupt", post(handlers::interrupt));
    Router::new()
        .route("/healthz", get(handlers::healthz))
        .merge(protected)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::guard,
        ))
        .with_state(state)
}

/// Serves `cw` on `listener` (answering to its address and
/// `allowed_hosts`; `token`, when given, needed on every route but
/// `/healthz`) until `stop` is cancelled; live streams end
/// then, and the server returns once open requests are answered.
pub async fn serve_http(
    cw: CodeWhale,
    version: Version,
    listener: TcpListener,
    token: Option<String>,
    allowed_hosts: Vec<String>,
    stop: CancellationToken,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let guard = OneToken::new(Access::new(listener.local_addr()?, &allowed_hosts), token);
    let app = router(cw, version, guard, stop.clone());
    let listener = listener.tap_io(|tcp| {
        // Frames are small and each matters now: no Nagle delay.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(stop.cancelled_owned())
        .into_future()
        .await
}

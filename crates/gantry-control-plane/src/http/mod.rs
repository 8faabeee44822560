//! The user-facing HTTP JSON API: runners, agents, threads, messages, a
//! thread's or every thread's updates live over SSE, the OpenAPI document
//! describing it, and
//! the dashboard over it (shared with `gantry serve`, from `gantry-web`).

mod all_events;
mod dashboard;
mod error;
mod events;
mod guard;
mod handlers;
mod openapi;
mod sse;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};

pub(crate) use guard::{Access, access};

use super::ControlPlane;

/// Every route of the API, behind the [`guard`] checks (host, origin,
/// token, content type), which also cover unknown paths. A test reads this
/// function's text: each `.route` here must be in the OpenAPI document.
pub(super) fn router(cp: ControlPlane, access: Access) -> Router {
    let guard = axum::middleware::from_fn_with_state((cp.clone(), Arc::new(access)), guard::guard);
    Router::new()
        .route("/", get(dashboard::index))
        .route("/assets/{file}", get(dashboard::asset))
        .route("/openapi.json", get(openapi::serve))
        .route("/v1/runners", get(handlers::runners))
        .route(
            "/v1/agents",
            post(handlers::create_agent).get(handlers::agents),
        )
        .route(
            "/v1/agents/{id}",
            get(handlers::agent).delete(handlers::delete_agent),
        )
        .route("/v1/agents/{id}/skills", post(handlers::install_skill))
        .route(
            "/v1/agents/{id}/threads",
            post(handlers::create_thread).get(handlers::agent_threads),
        )
        .route(
            "/v1/threads/{id}",
            get(handlers::thread).delete(handlers::delete_thread),
        )
        .route("/v1/threads/{id}/messages", post(handlers::send_message))
        .route("/v1/threads/{id}/interrupt", post(handlers::interrupt))
        .route("/v1/threads/{id}/events", get(events::follow))
        .route("/v1/events", get(all_events::follow_all))
        .fallback(error::no_route)
        .with_state(cp)
        .layer(guard)
}

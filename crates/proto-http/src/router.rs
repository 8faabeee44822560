//! Every route, behind the guard (which also covers unknown paths). A test
//! reads this file: each `.route` here must be in the OpenAPI document.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use gantry_core::Engine;
use tokio_util::sync::CancellationToken;

use crate::routes::{
    approvals, catalog, checkpoints, jobs, metrics, structured, thread_state, threads, trajectory,
    turns, user_input,
};
use crate::{AppState, HttpOptions, dashboard, error, guard, openapi, sse};

/// The API and dashboard over `engine`, for a server listening on `listen`
/// (which decides the names it answers to and whether tokens are needed);
/// live streams end when `stop` is cancelled.
pub fn router(
    engine: Engine,
    listen: SocketAddr,
    options: HttpOptions,
    stop: CancellationToken,
) -> Router {
    let state = AppState {
        engine: engine.clone(),
        workspace: Arc::new(options.workspace),
        tokens: Arc::new(options.tokens),
        access: Arc::new(gantry_web::guard::Access::new(
            listen,
            &options.allowed_hosts,
        )),
        metrics: crate::metrics::Metrics::collect(engine.clone(), stop.clone()),
        stop,
    };
    let guard = axum::middleware::from_fn_with_state(state.clone(), guard::guard);
    Router::new()
        .route("/", get(dashboard::index))
        .route("/assets/{file}", get(dashboard::asset))
        .route("/healthz", get(threads::health))
        .route("/openapi.json", get(openapi::serve))
        .route("/metrics", get(metrics::scrape))
        .route("/v1/threads", get(threads::list).post(threads::create))
        .route(
            "/v1/threads/{id}",
            get(threads::read).delete(threads::delete),
        )
        .route("/v1/threads/{id}/fork", post(threads::fork))
        .route("/v1/threads/{id}/checkpoints", get(checkpoints::list))
        .route("/v1/threads/{id}/rewind", post(checkpoints::rewind))
        .route("/v1/threads/{id}/archive", post(threads::archive))
        .route("/v1/threads/{id}/unarchive", post(threads::unarchive))
        .route("/v1/threads/{id}/messages", post(turns::send))
        .route("/v1/threads/{id}/structured", post(structured::generate))
        .route("/v1/threads/{id}/interrupt", post(turns::interrupt))
        .route("/v1/threads/{id}/pause", post(turns::pause))
        .route("/v1/threads/{id}/resume", post(turns::resume))
        .route("/v1/threads/{id}/events", get(sse::thread_events))
        .route("/v1/threads/{id}/approvals", get(approvals::of_thread))
        .route(
            "/v1/threads/{id}/approvals/{approval_id}",
            post(approvals::answer),
        )
        .route("/v1/threads/{id}/user-input", get(user_input::of_thread))
        .route(
            "/v1/threads/{id}/user-input/{request_id}",
            post(user_input::answer),
        )
        .route("/v1/threads/{id}/tasks", get(approvals::tasks))
        .route(
            "/v1/threads/{id}/tasks/{task_id}",
            post(approvals::complete),
        )
        .route(
            "/v1/threads/{id}/todos",
            get(thread_state::todos).put(thread_state::set_todos),
        )
        .route(
            "/v1/threads/{id}/goal",
            get(thread_state::goal)
                .put(thread_state::set_goal)
                .delete(thread_state::clear_goal),
        )
        .route("/v1/threads/{id}/usage", get(thread_state::usage))
        .route("/v1/threads/{id}/trajectory", get(trajectory::trajectory))
        .route("/v1/usage", get(thread_state::total_usage))
        .route("/v1/approvals", get(approvals::pending))
        .route("/v1/events", get(sse::all_events))
        .route("/v1/agents", get(catalog::agents).post(catalog::save_agent))
        .route(
            "/v1/agents/{id}",
            get(catalog::agent).delete(catalog::delete_agent),
        )
        .route("/v1/providers", get(catalog::providers))
        .route("/v1/providers/{name}", get(catalog::provider))
        .route("/v1/models", get(catalog::models))
        .route(
            "/v1/mcp/servers",
            get(catalog::mcp_servers).post(catalog::add_mcp_server),
        )
        .route(
            "/v1/mcp/servers/{name}",
            axum::routing::delete(catalog::remove_mcp_server),
        )
        .route("/v1/jobs", get(jobs::list).post(jobs::create))
        .route(
            "/v1/jobs/{id}",
            get(jobs::get).patch(jobs::update).delete(jobs::delete),
        )
        .route("/v1/jobs/{id}/run", post(jobs::run_now))
        .route("/v1/jobs/{id}/runs", get(jobs::history))
        .fallback(error::no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        // axum's default (2 MB) would refuse the images messages may carry.
        .layer(axum::extract::DefaultBodyLimit::max(
            gantry_types::MAX_MESSAGE_BODY,
        ))
        .layer(guard)
}

/// A known path, another method.
async fn method_not_allowed() -> error::ApiError {
    error::ApiError::method_not_allowed()
}

//! `GET /metrics`: the engine's counters in Prometheus text.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use crate::AppState;

/// The counters since the server started (a read like any other: a token
/// once tokens exist, a read-only one will do).
#[utoipa::path(get, path = "/metrics", tag = "meta",
    responses((status = 200, description = "Prometheus text exposition (format 0.0.4)",
        content_type = "text/plain", body = String)))]
pub(crate) async fn scrape(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, gantry_web::prometheus::CONTENT_TYPE)],
        state
            .metrics
            .render(state.engine.clone().threads().loaded()),
    )
}

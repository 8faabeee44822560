//! The guard every request passes first (`gantry_web::guard::OneToken`):
//! `Host` and `Origin` must name this server, so a web page cannot reach it
//! through DNS rebinding, token or not; then exactly `Authorization: Bearer
//! <token>` on every route but `/healthz` (the scheme case-sensitive, as
//! the real app-server's check is). Refusals carry CodeWhale's error body.

use axum::Json;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::AppState;

pub(super) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let open = request.uri().path() == "/healthz";
    match state.guard.check(&request, open) {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            let body = json!({
                "error": { "message": refusal.message, "status": refusal.status.as_u16() }
            });
            (refusal.status, Json(body)).into_response()
        }
    }
}

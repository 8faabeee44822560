//! The guard every request passes first (`gantry_web::guard::OneToken`):
//! `Host` and `Origin` must name this server, so a web page cannot reach it
//! through DNS rebinding, token or not; then exactly `Authorization: Bearer
//! <token>` on every route but `/healthz`. Refusals are `{"error": ...}`.

use axum::Json;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::wire::ErrorBody;

pub(super) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let open = request.uri().path() == "/healthz";
    match state.guard.check(&request, open) {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            let body = ErrorBody {
                error: refusal.message,
            };
            (refusal.status, Json(body)).into_response()
        }
    }
}

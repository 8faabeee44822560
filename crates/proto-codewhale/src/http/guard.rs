//! The guard every request passes first (`gantry_web::guard::OneToken`):
//! `Host` and `Origin` must name this server, so a web page cannot reach it
//! through DNS rebinding, token or not; then exactly `Authorization: Bearer
//! <token>` on every route but `/healthz` (the scheme case-sensitive, as
//! the real app-server's check is). Refusals carry CodeWhale's error body.

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::AppState;
use crate::Version;

pub(super) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let open = request.uri().path() == "/healthz";
    let mut response = match state.guard.check(&request, open) {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            // A missing or wrong token in the reference's words; the
            // Host/Origin refusals (which it lacks) keep Gantry's.
            let message = if refusal.status == StatusCode::UNAUTHORIZED {
                "app-server bearer token required".to_owned()
            } else {
                refusal.message
            };
            let body = json!({
                "error": { "message": message, "status": refusal.status.as_u16() }
            });
            (refusal.status, Json(body)).into_response()
        }
    };
    // What the reference's CORS layer adds to every answer: caches must
    // keep answers to different origins apart (0.10's names the origin only).
    let vary = match state.version {
        Version::V0_8 => "origin, access-control-request-method, access-control-request-headers",
        Version::V0_10 => "origin",
    };
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static(vary));
    response
}

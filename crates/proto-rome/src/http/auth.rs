//! The bearer token, checked before anything reads the body: exactly
//! `Authorization: Bearer <token>`, else 401 with `{"error": ...}`.

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::wire::ErrorBody;

pub(super) async fn require_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = state.token.as_deref() else {
        return next.run(request).await;
    };
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if given.is_some_and(|token| same(token.as_bytes(), expected.as_bytes())) {
        return next.run(request).await;
    }
    let body = ErrorBody {
        error: "bearer token required".to_owned(),
    };
    (StatusCode::UNAUTHORIZED, Json(body)).into_response()
}

/// Compares in time independent of where the bytes differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

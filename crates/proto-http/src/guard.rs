//! Who may call the API, checked before any route runs. The host, origin
//! and content type checks are the control plane's own (`gantry_web::guard`,
//! so one client works against both); the tokens are this server's:
//! a bearer token of `gantry tokens create` is required whenever one exists
//! or the API listens beyond loopback; else `401`. A read-only token may
//! only `GET` (else `403`). The OpenAPI document, the health check and the
//! dashboard need none (the dashboard asks for a token when the API
//! answers `401`).

use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use gantry_web::guard::{self as web, Refusal};

use crate::AppState;
use crate::error::ApiError;
use crate::tokens;

/// Runs the checks, then the route.
pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let checked = state
        .access
        .check_sender(&request)
        .map_err(refused)
        .and_then(|()| {
            if is_open(&request) {
                Ok(())
            } else {
                check_token(&state, &request)
            }
        })
        .and_then(|()| state.access.check_content_type(&request).map_err(refused));
    match checked {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

/// A shared check's refusal in this API's error shape.
fn refused(refusal: Refusal) -> ApiError {
    ApiError::new(refusal.status, refusal.code(), refusal.message)
}

/// The routes anyone who reaches the server may read.
fn is_open(request: &Request) -> bool {
    let path = request.uri().path();
    web::is_dashboard(request)
        || (web::reads(request) && matches!(path, "/openapi.json" | "/healthz"))
}

/// A known bearer token, when tokens exist or the API is not loopback-only;
/// a read-only one only for reads.
fn check_token(state: &AppState, request: &Request) -> Result<(), ApiError> {
    // Read per request: tokens are made and revoked by another process.
    let known = state.tokens.list().map_err(|e| {
        tracing::error!(error = %e, "cannot read the HTTP API tokens");
        ApiError::unavailable("cannot check the API token right now")
    })?;
    if known.is_empty() && state.access.loopback_only() {
        return Ok(());
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(web::bearer);
    let Some(token) = presented else {
        return Err(ApiError::unauthorized(if known.is_empty() {
            "this API listens beyond loopback and no token exists: create one with \
             `gantry tokens create --name NAME` and send `Authorization: Bearer <token>`"
        } else {
            "missing `Authorization: Bearer <token>` (tokens come from `gantry tokens create`)"
        }));
    };
    let Some(record) = tokens::find(&known, token) else {
        return Err(ApiError::unauthorized("unknown or revoked API token"));
    };
    if record.read_only && !matches!(*request.method(), Method::GET | Method::HEAD) {
        return Err(ApiError::forbidden(format!(
            "token {:?} is read-only: it may only GET",
            record.name
        )));
    }
    Ok(())
}

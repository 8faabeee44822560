//! Who may call the HTTP API, checked before any route runs. The host,
//! origin and content type checks are `gantry_web::guard`'s, shared with
//! `gantry serve --http-addr` (names: the listen address, loopback, each
//! `--allowed-host`; every `POST` must be JSON); the tokens are the control
//! plane's: a bearer token of `gantry control-plane create-token` is
//! required whenever one exists or the API listens beyond loopback; else
//! `401`; a read-only token may only `GET` or `HEAD`, else `403`.
//! `GET /openapi.json`, a fixed public document, and the dashboard (which
//! asks for a token when the API answers `401`) need none.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use gantry_web::guard::{self as web, Refusal};

use crate::ControlPlane;
use crate::api_tokens;

/// The access rules of the API.
pub(crate) type Access = web::Access;

/// The rules of an API listening on `listen`, also answering to `allowed_hosts`.
pub(crate) fn access(listen: SocketAddr, allowed_hosts: &[String]) -> Access {
    web::Access::new(listen, allowed_hosts)
        .with_host_hint("; if it should be, start it with --allowed-host NAME")
        .with_json_posts()
}

/// Runs the checks, then the route.
pub(super) async fn guard(
    State((cp, access)): State<(ControlPlane, Arc<Access>)>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(refusal) = access.check_sender(&request) {
        return respond(refusal);
    }
    let open = web::is_dashboard(&request)
        || (web::reads(&request) && request.uri().path() == "/openapi.json");
    if !open {
        // The request is not `Sync`: read what the token check needs before
        // awaiting it.
        let authorization = request
            .headers()
            .get(header::AUTHORIZATION)
            .map(|v| v.to_str().unwrap_or_default().to_owned());
        let reads = web::reads(&request);
        if let Err(refusal) = check_token(&cp, &access, authorization.as_deref(), reads).await {
            return respond(refusal);
        }
    }
    match access.check_content_type(&request) {
        Ok(()) => next.run(request).await,
        Err(refusal) => respond(refusal),
    }
}

/// A refusal in this API's error shape.
fn respond(refusal: Refusal) -> Response {
    let body = Json(super::error::error_body(refusal.code(), &refusal.message));
    let mut response = (refusal.status, body).into_response();
    if refusal.status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"gantry control plane\""),
        );
    }
    response
}

/// A known bearer token, when tokens exist or the API is not loopback-only;
/// one that may write unless the request `reads`.
async fn check_token(
    cp: &ControlPlane,
    access: &Access,
    authorization: Option<&str>,
    reads: bool,
) -> Result<(), Refusal> {
    // Tokens are made and revoked by another process: the store reads them
    // again whenever any process changed them (`store/token_stamp.rs`).
    let known = cp.inner.store.api_tokens().await.map_err(|e| {
        tracing::error!(error = %e, "cannot read the API tokens");
        Refusal::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "cannot check the API token right now",
        )
    })?;
    if known.is_empty() && access.loopback_only() {
        return Ok(());
    }
    let presented = authorization.and_then(web::bearer);
    let Some(token) = presented else {
        let message = if known.is_empty() {
            "this control plane's HTTP API listens beyond loopback and no API token exists: \
             create one with `gantry control-plane create-token --name NAME` and send it as \
             `Authorization: Bearer <token>`"
        } else {
            "missing `Authorization: Bearer <token>` (tokens come from \
             `gantry control-plane create-token`)"
        };
        return Err(Refusal::new(StatusCode::UNAUTHORIZED, message));
    };
    match api_tokens::find(&known, token) {
        None => Err(Refusal::new(
            StatusCode::UNAUTHORIZED,
            "unknown or revoked API token",
        )),
        Some(record) if record.read_only && !reads => Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!(
                "API token {:?} is read-only: it may only GET or HEAD",
                record.name
            ),
        )),
        Some(_) => Ok(()),
    }
}

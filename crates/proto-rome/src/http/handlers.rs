//! The routes: runs and forks answered as NDJSON (one message a line,
//! each sent as it comes), the rest as JSON; a request refused before its
//! stream starts is a 4xx/5xx with `{"error": ...}`.

use std::convert::Infallible;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::stream;
use gantry_web::trace_context::traceparent;
use serde_json::json;
use tokio::sync::mpsc;

use super::AppState;
use crate::service::Refused;
use crate::wire::{ErrorBody, ForkRequest, RunRequest};

pub(super) async fn run(
    State(state): State<AppState>,
    headers: HeaderMap,
    Json(req): Json<RunRequest>,
) -> Response {
    match state.rome.run(req, traceparent(&headers)).await {
        Ok(lines) => ndjson(lines, &state),
        Err(e) => refused(&e),
    }
}

pub(super) async fn fork(
    State(state): State<AppState>,
    headers: HeaderMap,
    Json(req): Json<ForkRequest>,
) -> Response {
    match state.rome.fork(req, traceparent(&headers)).await {
        Ok(lines) => ndjson(lines, &state),
        Err(e) => refused(&e),
    }
}

pub(super) async fn interrupt(State(state): State<AppState>, Path(turn): Path<String>) -> Response {
    match state.rome.interrupt(&turn).await {
        Ok(true) => Json(json!({ "interrupted": true })).into_response(),
        Ok(false) => refused(&Refused::NotFound(format!(
            "turn `{turn}` is not running here"
        ))),
        Err(e) => refused(&e),
    }
}

pub(super) async fn agent(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    match state.rome.agent_info(&name).await {
        Ok(Some((id, model))) => {
            Json(json!({ "name": name, "id": id, "model": model })).into_response()
        }
        Ok(None) => refused(&Refused::NotFound(format!("agent `{name}` not found"))),
        Err(e) => refused(&e),
    }
}

pub(super) async fn action(
    State(state): State<AppState>,
    Path((name, action)): Path<(String, String)>,
) -> Response {
    match state.rome.may_call(&name, &action).await {
        Ok(Some(allowed)) => Json(json!({ "allowed": allowed })).into_response(),
        Ok(None) => refused(&Refused::NotFound(format!("agent `{name}` not found"))),
        Err(e) => refused(&e),
    }
}

pub(super) async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok", "service": "gantry-rome" }))
}

/// The stream's lines as the body, until the turn's end or the server's stop.
fn ndjson(lines: mpsc::Receiver<Bytes>, state: &AppState) -> Response {
    let stop = state.stop.clone();
    let body = stream::unfold((lines, stop), |(mut lines, stop)| async move {
        let line = tokio::select! {
            line = lines.recv() => line?,
            () = stop.cancelled() => return None,
        };
        Some((Ok::<_, Infallible>(line), (lines, stop)))
    });
    (
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

fn refused(e: &Refused) -> Response {
    let status = match e {
        Refused::NotFound(_) => StatusCode::NOT_FOUND,
        Refused::Invalid(_) => StatusCode::BAD_REQUEST,
        Refused::Engine(e) => {
            tracing::warn!(error = %e, "a Rome request failed");
            StatusCode::INTERNAL_SERVER_ERROR
        }
    };
    let body = ErrorBody {
        error: e.to_string(),
    };
    (status, Json(body)).into_response()
}

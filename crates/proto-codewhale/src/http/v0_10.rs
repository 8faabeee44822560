//! CodeWhale 0.10 over HTTP: its routes (`/thread`, `/app`, `/prompt`;
//! `/tool`, `/jobs` and `/mcp/startup` are gone) with its answers: a
//! refusal as `{error: {code, jsonrpc_code, message, data}}` with the
//! status the library gives its JSON-RPC code, an app refusal 400 (409
//! when it names a request), a message answered when its turn ends. Beside
//! them what Gantry adds for interactive turns, as on the seed's listener
//! (frames over SSE, approvals, interrupts), and the answer to a question
//! by its thread (`/v1/user-input/{thread_id}/{request_id}`, where the
//! library sends its clients).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use gantry_types::ThreadId;
use gantry_web::trace_context::traceparent;
use serde::Deserialize;
use serde_json::json;

use super::AppState;
use crate::service::v0_10::{RUNTIME_UNAVAILABLE, Refusal, THREAD_NOT_FOUND};
use crate::wire::ThreadResponse;
use crate::wire::v0_10::{AppRequest, PromptRequest, ThreadRequest, UserInputAnswer};

/// A refusal as the library renders a JSON-RPC error over HTTP.
fn refused(refusal: Refusal) -> Response {
    let (status, code) = match refusal.code {
        -32600 | -32602 => (StatusCode::BAD_REQUEST, "invalid_request"),
        THREAD_NOT_FOUND => (StatusCode::NOT_FOUND, "thread_not_found"),
        RUNTIME_UNAVAILABLE => (StatusCode::SERVICE_UNAVAILABLE, "runtime_unavailable"),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal_error"),
    };
    let body = json!({
        "error": {
            "code": code,
            "jsonrpc_code": refusal.code,
            "message": refusal.message,
            "data": refusal.data,
        }
    });
    (status, Json(body)).into_response()
}

pub(super) async fn thread(
    State(state): State<AppState>,
    headers: HeaderMap,
    Json(req): Json<ThreadRequest>,
) -> Response {
    let v = state.cw.v0_10();
    if let ThreadRequest::Message(params) = req {
        let thread_id = params.thread_id.clone();
        let trace_parent = traceparent(&headers);
        return match v.message(params, None, trace_parent).await {
            Ok(ran) => {
                // The turn ran to its end before this answer.
                let mut response = ThreadResponse::bare(thread_id, "completed");
                response.model = Some(ran.model);
                response.events = ran.frames;
                response.data = json!({ "turn_id": ran.turn_id });
                (StatusCode::OK, Json(response)).into_response()
            }
            Err(refusal) => refused(refusal),
        };
    }
    match v.thread_request(req).await {
        Ok(response) => (StatusCode::OK, Json(response)).into_response(),
        Err(refusal) => refused(refusal),
    }
}

pub(super) async fn app(State(state): State<AppState>, Json(req): Json<AppRequest>) -> Response {
    let response = state.cw.v0_10().app_request(req).await;
    let status = if response.ok {
        StatusCode::OK
    } else if response.data.get("request_id").is_some() {
        StatusCode::CONFLICT
    } else {
        StatusCode::BAD_REQUEST
    };
    (status, Json(response)).into_response()
}

pub(super) async fn prompt(
    State(state): State<AppState>,
    headers: HeaderMap,
    Json(req): Json<PromptRequest>,
) -> Response {
    match state
        .cw
        .v0_10()
        .prompt(req, None, traceparent(&headers))
        .await
    {
        Ok(response) => (StatusCode::OK, Json(response)).into_response(),
        Err(refusal) => refused(refusal),
    }
}

/// `POST /v1/chat/completions`: the library forwards an OpenAI body to
/// its configured provider, with the provider's key. Gantry runs a model
/// only in a thread's turn, under the thread's policy: no client gets the
/// bare use of a provider's key.
pub(super) async fn chat_completions() -> Response {
    let body = json!({
        "error": {
            "message": "chat completions are not served here: Gantry runs a model only in a \
                        thread's turn (send a message, or a prompt with allowed_tools: [])",
            "type": "not_implemented",
        }
    });
    (StatusCode::NOT_IMPLEMENTED, Json(body)).into_response()
}

/// The answers to one question.
#[derive(Deserialize)]
pub(super) struct Answers {
    answers: Vec<UserInputAnswer>,
}

/// `POST /v1/user-input/{thread_id}/{request_id}`: answers the question
/// `request_id` of `thread_id`; 404 for a question it never asked, 409
/// once answered (or timed out), 400 for an answer that does not fit.
pub(super) async fn user_input(
    State(state): State<AppState>,
    Path((thread_id, request_id)): Path<(String, String)>,
    Json(body): Json<Answers>,
) -> Response {
    use gantry_core::EngineError;
    let thread = ThreadId(thread_id.clone());
    match state
        .cw
        .v0_10()
        .answer(&thread, &request_id, body.answers)
        .await
    {
        Ok(answers) => Json(json!({
            "thread_id": thread_id,
            "request_id": request_id,
            "resolved": true,
            "answers": answers,
        }))
        .into_response(),
        Err(e @ (EngineError::ThreadNotFound(_) | EngineError::NotFound { .. })) => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": e.to_string() })),
        )
            .into_response(),
        Err(e @ EngineError::AlreadyResolved { .. }) => (
            StatusCode::CONFLICT,
            Json(json!({ "error": e.to_string() })),
        )
            .into_response(),
        Err(e @ EngineError::InvalidInput(_)) => (
            StatusCode::BAD_REQUEST,
            Json(json!({ "error": e.to_string() })),
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({ "error": e.to_string() })),
        )
            .into_response(),
    }
}

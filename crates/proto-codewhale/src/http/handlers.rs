//! The JSON routes. A request the engine refuses is answered as the real
//! app-server answers its runtime's errors: HTTP 200, `thread_id` and
//! `status` `error` (with `data.error`), a prompt's `output` the error and
//! its `model` `unknown`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use gantry_web::trace_context::traceparent;
use serde_json::{Value, json};

use super::AppState;
use crate::service::ServiceError;
use crate::wire::{
    AppRequest, AppResponse, ApprovalDecisionRequest, PromptRequest, PromptResponse, ThreadRequest,
    ThreadResponse,
};

pub(super) async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok", "protocol": "v2", "service": "gantry" }))
}

/// Background jobs: Gantry has none outside threads (their turns are
/// followed over `/thread/{id}/events`), so the list is empty.
pub(super) async fn jobs() -> Json<AppResponse> {
    Json(AppResponse {
        ok: true,
        data: json!({ "jobs": [] }),
        events: Vec::new(),
    })
}

/// Connects the configured MCP servers; their summary (the progress goes
/// to `GET /events` as it happens).
pub(super) async fn mcp_startup(State(state): State<AppState>) -> Json<Value> {
    let summary = state.cw.engine().mcp().start_servers().await;
    let summary = crate::frames::mcp_summary(summary);
    Json(json!({ "ok": true, "summary": summary }))
}

pub(super) async fn thread(
    State(state): State<AppState>,
    headers: HeaderMap,
    Json(req): Json<ThreadRequest>,
) -> Json<ThreadResponse> {
    let trace_parent = traceparent(&headers);
    Json(answer(
        state.cw.thread_request_traced(req, trace_parent).await,
    ))
}

pub(super) async fn app(
    State(state): State<AppState>,
    Json(req): Json<AppRequest>,
) -> Json<AppResponse> {
    Json(state.cw.app_request(req).await)
}

pub(super) async fn prompt(
    State(state): State<AppState>,
    headers: HeaderMap,
    Json(req): Json<PromptRequest>,
) -> Json<PromptResponse> {
    Json(
        match state.cw.prompt_traced(req, traceparent(&headers)).await {
            Ok(response) => response,
            Err(e) => PromptResponse {
                output: e.to_string(),
                model: "unknown".to_owned(),
                events: Vec::new(),
            },
        },
    )
}

pub(super) async fn approval(
    State(state): State<AppState>,
    Path((id, approval_id)): Path<(String, String)>,
    Json(req): Json<ApprovalDecisionRequest>,
) -> Json<ThreadResponse> {
    Json(answer(state.cw.approve(&id, &approval_id, &req).await))
}

pub(super) async fn interrupt(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Json<ThreadResponse> {
    Json(answer(state.cw.interrupt(&id).await))
}

fn answer(result: Result<ThreadResponse, ServiceError>) -> ThreadResponse {
    result.unwrap_or_else(|e| {
        let mut response = ThreadResponse::bare("error", "error");
        response.data = json!({ "error": e.to_string() });
        response
    })
}

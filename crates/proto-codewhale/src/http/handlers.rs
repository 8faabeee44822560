//! The JSON routes. A request the engine refuses is answered as the real
//! app-server answers its runtime's errors: HTTP 200, `thread_id` and
//! `status` `error` (with `data.error`), a prompt's `output` the error and
//! its `model` `unknown`.

use axum::Json;
use axum::extract::{Path, State};
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

pub(super) async fn thread(
    State(state): State<AppState>,
    Json(req): Json<ThreadRequest>,
) -> Json<ThreadResponse> {
    Json(answer(state.cw.thread_request(req).await))
}

pub(super) async fn app(
    State(state): State<AppState>,
    Json(req): Json<AppRequest>,
) -> Json<AppResponse> {
    Json(state.cw.app_request(req).await)
}

pub(super) async fn prompt(
    State(state): State<AppState>,
    Json(req): Json<PromptRequest>,
) -> Json<PromptResponse> {
    Json(match state.cw.prompt(req).await {
        Ok(response) => response,
        Err(e) => PromptResponse {
            output: e.to_string(),
            model: "unknown".to_owned(),
            events: Vec::new(),
        },
    })
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

//! Structured answers: a turn whose answer is JSON valid against a schema,
//! answered once it ended.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use gantry_core::{DEFAULT_STRUCTURED_RETRIES, EngineError, StructuredRequest};
use gantry_types::ThreadId;
use serde_json::json;

use super::Answer;
use crate::AppState;
use crate::error::{ApiError, ErrorBody, body};
use crate::views::{StructuredAnswer, StructuredAsk, UsageView};

/// Run a structured turn and answer its output. The model may answer by
/// calling the engine's submit tool or with JSON text; either is checked
/// against the schema, and an invalid answer is sent back with its errors
/// until the retries run out.
#[utoipa::path(post, path = "/v1/threads/{id}/structured", tag = "turns",
    params(("id" = String, Path, description = "Thread id")), request_body = StructuredAsk,
    responses((status = 200, body = StructuredAnswer),
        (status = 404, description = "No such thread", body = ErrorBody),
        (status = 409, description = "A turn is running", body = ErrorBody),
        (status = 422, description = "A schema that does not compile, or a turn that ended \
            without a valid answer (details.turn_id names it)", body = ErrorBody)))]
pub(crate) async fn generate(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Answer<StructuredAnswer> {
    let ask: StructuredAsk = body(&bytes)?;
    if !ask.schema.is_object() && !ask.schema.is_boolean() {
        return Err(ApiError::validation(
            Some("schema"),
            "schema: a JSON Schema is an object (or true/false)",
        ));
    }
    let request = StructuredRequest {
        prompt: ask.prompt,
        schema: ask.schema,
        schema_name: ask.schema_name,
        instructions: ask.instructions,
        retries: ask.retries.unwrap_or(DEFAULT_STRUCTURED_RETRIES),
        trace_parent: gantry_web::trace_context::traceparent(&headers),
    };
    let output = state
        .engine
        .structured()
        .generate(&ThreadId(id), request)
        .await
        .map_err(|e| match &e {
            EngineError::Structured { turn, .. } => {
                let turn = turn.to_string();
                ApiError::from(e).with_details(json!({ "turn_id": turn }))
            }
            _ => ApiError::from(e),
        })?;
    Ok(Json(StructuredAnswer {
        turn_id: output.turn_id.to_string(),
        output: output.payload,
        usage: UsageView::from(&output.usage),
    }))
}

//! Turns: messages (start, steer or queue; `?wait=true` until the turn
//! ends), interrupt, pause and resume.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use gantry_core::{IfBusy as EngineIfBusy, UserInput};
use gantry_types::{ImagePart, ThreadId};
use serde::Deserialize;
use utoipa::IntoParams;

use super::threads::{required, summary};
use super::{Answer, Created};
use crate::AppState;
use crate::error::ErrorBody;
use crate::extract::Query;
use crate::views::{IfBusy, Interrupted, MessageAccepted, NewMessage, ThreadSummary, to_json};

/// `POST /v1/threads/{id}/messages` options.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendQuery {
    /// Answer once the turn has ended, with the turn (for scripts).
    #[serde(default)]
    wait: bool,
}

/// Send a message: it starts a turn, or with a turn running is refused
/// (`if_busy: reject`, 409), steers it, or is queued after it.
#[utoipa::path(post, path = "/v1/threads/{id}/messages", tag = "turns",
    params(("id" = String, Path, description = "Thread id"), SendQuery), request_body = NewMessage,
    responses((status = 202, description = "Accepted; the turn goes on", body = MessageAccepted),
        (status = 200, description = "With ?wait=true: the turn ended", body = MessageAccepted),
        (status = 404, description = "No such thread", body = ErrorBody),
        (status = 409, description = "Busy (reject), nothing to steer, or archived", body = ErrorBody),
        (status = 422, description = "A bad field (an empty text, a malformed image, images for a model that reads none)", body = ErrorBody)))]
pub(crate) async fn send(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<SendQuery>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Created<MessageAccepted> {
    let message: NewMessage = required(&bytes)?;
    let id = ThreadId(id);
    let field = if message.images.is_empty() {
        "text"
    } else {
        "images"
    };
    let input = UserInput {
        text: message.text,
        images: message
            .images
            .into_iter()
            .map(|i| ImagePart::new(i.media_type, i.data))
            .collect(),
        trace_parent: gantry_web::trace_context::traceparent(&headers),
        ..UserInput::default()
    };
    let if_busy = match message.if_busy {
        IfBusy::Reject => EngineIfBusy::Reject,
        IfBusy::Queue => EngineIfBusy::Queue,
        IfBusy::Steer => EngineIfBusy::Steer,
    };
    let turn_id = state
        .engine
        .turns()
        .send_input(&id, input, if_busy)
        .await
        .map_err(|e| {
            let error = crate::error::ApiError::from(e);
            if error.status() == StatusCode::UNPROCESSABLE_ENTITY {
                error.with_field(field)
            } else {
                error
            }
        })?;
    if !query.wait {
        let accepted = MessageAccepted {
            turn_id: turn_id.0,
            turn: None,
        };
        return Ok((StatusCode::ACCEPTED, Json(accepted)));
    }
    let turn = state.engine.turns().wait(&id, &turn_id).await?;
    let accepted = MessageAccepted {
        turn_id: turn_id.0,
        turn: Some(to_json(&turn)),
    };
    Ok((StatusCode::OK, Json(accepted)))
}

/// Interrupt the running turn, if any.
#[utoipa::path(post, path = "/v1/threads/{id}/interrupt", tag = "turns",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = Interrupted),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn interrupt(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<Interrupted> {
    let turn = state.engine.turns().interrupt(&ThreadId(id)).await?;
    Ok(Json(Interrupted {
        turn_id: turn.map(|t| t.0),
    }))
}

/// Pause: no model or tool call starts until resumed.
#[utoipa::path(post, path = "/v1/threads/{id}/pause", tag = "turns",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = ThreadSummary),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn pause(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<ThreadSummary> {
    let id = ThreadId(id);
    state.engine.threads().pause(&id).await?;
    summary(&state, &id).await
}

/// Resume a paused thread.
#[utoipa::path(post, path = "/v1/threads/{id}/resume", tag = "turns",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = ThreadSummary),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn resume(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<ThreadSummary> {
    let id = ThreadId(id);
    state.engine.threads().resume(&id).await?;
    summary(&state, &id).await
}

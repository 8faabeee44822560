//! The JSON routes: each reads its input, runs the operation, and answers
//! with the view and the status that fits.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::error::{body, optional_body};
use crate::ControlPlane;
use crate::error::ApiError;
use crate::ops::{InterruptSent, MessageAccepted, NewThread};
use crate::views::{AgentView, RunnerView, SkillView, ThreadDetail, ThreadView};

/// What a route answers.
type Answer<T> = Result<Json<T>, ApiError>;

/// What a creating route answers: `201` and the new thing.
type Created<T> = Result<(StatusCode, Json<T>), ApiError>;

/// `GET /v1/runners`.
pub(super) async fn runners(State(cp): State<ControlPlane>) -> Answer<Vec<RunnerView>> {
    cp.runners().await.map(Json)
}

/// `POST /v1/agents`.
pub(super) async fn create_agent(
    State(cp): State<ControlPlane>,
    bytes: Bytes,
) -> Created<AgentView> {
    let new = optional_body(&bytes)?;
    let agent = cp.create_agent(new).await?;
    Ok((StatusCode::CREATED, Json(agent)))
}

/// `GET /v1/agents`.
pub(super) async fn agents(State(cp): State<ControlPlane>) -> Answer<Vec<AgentView>> {
    cp.agents().await.map(Json)
}

/// `GET /v1/agents/{id}`.
pub(super) async fn agent(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
) -> Answer<AgentView> {
    cp.agent(&id).await.map(Json)
}

/// `DELETE /v1/agents/{id}`.
pub(super) async fn delete_agent(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
) -> Answer<AgentView> {
    cp.delete_agent(&id).await.map(Json)
}

/// `POST /v1/agents/{id}/skills`.
pub(super) async fn install_skill(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Created<SkillView> {
    let new = body(&bytes)?;
    let skill = cp.install_skill(&id, new).await?;
    Ok((StatusCode::CREATED, Json(skill)))
}

/// `POST /v1/agents/{id}/threads`.
pub(super) async fn create_thread(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Created<ThreadView> {
    let new: NewThread = optional_body(&bytes)?;
    let thread = cp.create_thread(&id, new).await?;
    Ok((StatusCode::CREATED, Json(thread)))
}

/// `GET /v1/agents/{id}/threads`.
pub(super) async fn agent_threads(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
) -> Answer<Vec<ThreadView>> {
    cp.agent_threads(&id).await.map(Json)
}

/// `GET /v1/threads/{id}`.
pub(super) async fn thread(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
) -> Answer<ThreadDetail> {
    cp.thread(&id).await.map(Json)
}

/// `DELETE /v1/threads/{id}`.
pub(super) async fn delete_thread(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
) -> Answer<ThreadView> {
    cp.delete_thread(&id).await.map(Json)
}

/// `POST /v1/threads/{id}/messages`: `202` once the runner started (or
/// steered) a turn; the turn goes on, followed over the events route.
pub(super) async fn send_message(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Result<(StatusCode, Json<MessageAccepted>), ApiError> {
    let new = body(&bytes)?;
    let accepted = cp.send_message(&id, new).await?;
    Ok((StatusCode::ACCEPTED, Json(accepted)))
}

/// `POST /v1/threads/{id}/interrupt`: `202` once the interrupt went to the
/// runner (0.7.0); the turn's end comes over the events route.
pub(super) async fn interrupt(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<InterruptSent>), ApiError> {
    let sent = cp.interrupt(&id).await?;
    Ok((StatusCode::ACCEPTED, Json(sent)))
}

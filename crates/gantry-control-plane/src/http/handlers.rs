//! The JSON routes: each reads its input, runs the operation, and answers
//! with the view and the status that fits.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::error::{ErrorBody, RunnerFailures, body, optional_body};
use crate::ControlPlane;
use crate::error::ApiError;
use crate::ops::{InterruptSent, MessageAccepted, NewAgent, NewMessage, NewSkill, NewThread};
use crate::views::{AgentView, RunnerView, SkillView, ThreadDetail, ThreadView};

/// What a route answers.
type Answer<T> = Result<Json<T>, ApiError>;

/// What a creating route answers: `201` and the new thing.
type Created<T> = Result<(StatusCode, Json<T>), ApiError>;

/// List runners, connected or not, with what they offer and their load.
#[utoipa::path(get, path = "/v1/runners", tag = "runners",
    responses((status = 200, description = "Runners, connected or not, with what they offer and their load", body = Vec<RunnerView>)))]
pub(super) async fn runners(State(cp): State<ControlPlane>) -> Answer<Vec<RunnerView>> {
    cp.runners().await.map(Json)
}

/// Create an agent.
///
/// On the runner given, else on the least loaded connected runner
/// offering the sdk (and model).
#[utoipa::path(post, path = "/v1/agents", tag = "agents",
    request_body(content = Option<NewAgent>, description = "Every field optional; an empty body is `{}`"),
    responses((status = 201, description = "Created on a chosen runner, or on the least loaded connected runner offering the sdk (and model)", body = AgentView),
        (status = 400, description = "A bad body; the message names the field", body = ErrorBody),
        (status = 404, description = "No such runner", body = ErrorBody),
        (status = 409, description = "The id is taken, no runner offers the sdk and model, or the runner refused", body = ErrorBody),
        RunnerFailures))]
pub(super) async fn create_agent(
    State(cp): State<ControlPlane>,
    bytes: Bytes,
) -> Created<AgentView> {
    let new = optional_body(&bytes)?;
    let agent = cp.create_agent(new).await?;
    cp.agents_changed();
    Ok((StatusCode::CREATED, Json(agent)))
}

/// List agents that are not deleted.
#[utoipa::path(get, path = "/v1/agents", tag = "agents",
    responses((status = 200, description = "Agents that are not deleted", body = Vec<AgentView>)))]
pub(super) async fn agents(State(cp): State<ControlPlane>) -> Answer<Vec<AgentView>> {
    cp.agents().await.map(Json)
}

/// Get an agent.
#[utoipa::path(get, path = "/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, body = AgentView),
        (status = 404, description = "No such agent", body = ErrorBody)))]
pub(super) async fn agent(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
) -> Answer<AgentView> {
    cp.agent(&id).await.map(Json)
}

/// Delete an agent on its runner.
#[utoipa::path(delete, path = "/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, description = "Deleted on its runner", body = AgentView),
        (status = 404, description = "No such agent", body = ErrorBody),
        (status = 409, description = "Already deleted, or the runner refused", body = ErrorBody),
        RunnerFailures))]
pub(super) async fn delete_agent(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
) -> Answer<AgentView> {
    let agent = cp.delete_agent(&id).await?;
    cp.agents_changed();
    Ok(Json(agent))
}

/// Install a skill package into an agent.
#[utoipa::path(post, path = "/v1/agents/{id}/skills", tag = "agents",
    params(("id" = String, Path, description = "Agent id")),
    request_body = NewSkill,
    responses((status = 201, description = "Installed into the agent", body = SkillView),
        (status = 400, description = "A bad body; the message names the field", body = ErrorBody),
        (status = 404, description = "No such agent", body = ErrorBody),
        (status = 409, description = "The agent is deleted, or the runner refused", body = ErrorBody),
        RunnerFailures))]
pub(super) async fn install_skill(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Created<SkillView> {
    let new = body(&bytes)?;
    let skill = cp.install_skill(&id, new).await?;
    cp.agents_changed();
    Ok((StatusCode::CREATED, Json(skill)))
}

/// Create a thread of an agent, on the agent's runner.
#[utoipa::path(post, path = "/v1/agents/{id}/threads", tag = "threads",
    params(("id" = String, Path, description = "Agent id")),
    request_body(content = Option<NewThread>, description = "Every field optional; an empty body is `{}`"),
    responses((status = 201, description = "Created on the agent's runner", body = ThreadView),
        (status = 400, description = "A bad body; the message names the field", body = ErrorBody),
        (status = 404, description = "No such agent", body = ErrorBody),
        (status = 409, description = "The agent is deleted, its runner does not offer the model, or the runner refused", body = ErrorBody),
        RunnerFailures))]
pub(super) async fn create_thread(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Created<ThreadView> {
    let new: NewThread = optional_body(&bytes)?;
    let thread = cp.create_thread(&id, new).await?;
    Ok((StatusCode::CREATED, Json(thread)))
}

/// List an agent's threads.
#[utoipa::path(get, path = "/v1/agents/{id}/threads", tag = "threads",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, description = "The agent's threads, oldest first", body = Vec<ThreadView>),
        (status = 404, description = "No such agent", body = ErrorBody)))]
pub(super) async fn agent_threads(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
) -> Answer<Vec<ThreadView>> {
    cp.agent_threads(&id).await.map(Json)
}

/// Get a thread with its turns and their items.
#[utoipa::path(get, path = "/v1/threads/{id}", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, description = "The thread with its turns and their items", body = ThreadDetail),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(super) async fn thread(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
) -> Answer<ThreadDetail> {
    cp.thread(&id).await.map(Json)
}

/// Delete a thread on its runner.
#[utoipa::path(delete, path = "/v1/threads/{id}", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, description = "Deleted on its runner", body = ThreadView),
        (status = 404, description = "No such thread", body = ErrorBody),
        (status = 409, description = "Already deleted, or the runner refused", body = ErrorBody),
        RunnerFailures))]
pub(super) async fn delete_thread(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
) -> Answer<ThreadView> {
    cp.delete_thread(&id).await.map(Json)
}

/// Send a user message.
///
/// `202` once the runner started a turn (or steered the running one, with
/// `allow_steer`); the turn goes on, followed over the events routes.
#[utoipa::path(post, path = "/v1/threads/{id}/messages", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    request_body = NewMessage,
    responses((status = 202, description = "The runner started a turn, or steered the running one (`allow_steer`)", body = MessageAccepted),
        (status = 400, description = "A bad body; the message names the field", body = ErrorBody),
        (status = 404, description = "No such thread", body = ErrorBody),
        (status = 409, description = "The thread is deleted, or the runner refused (e.g. busy and `allow_steer` is false)", body = ErrorBody),
        RunnerFailures))]
pub(super) async fn send_message(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Result<(StatusCode, Json<MessageAccepted>), ApiError> {
    let new = body(&bytes)?;
    let accepted = cp.send_message(&id, new).await?;
    Ok((StatusCode::ACCEPTED, Json(accepted)))
}

/// Interrupt the thread's running turn.
///
/// `202` once the interrupt went to the runner (0.7.0; 0.2.0 has none);
/// the turn's end comes over the events routes.
#[utoipa::path(post, path = "/v1/threads/{id}/interrupt", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 202, description = "The interrupt went to the runner (protocol 0.7; 0.2 has none); the turn's end comes over the events", body = InterruptSent),
        (status = 404, description = "No such thread", body = ErrorBody),
        (status = 409, description = "The thread is deleted, or its runner speaks 0.2", body = ErrorBody),
        RunnerFailures))]
pub(super) async fn interrupt(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<InterruptSent>), ApiError> {
    let sent = cp.interrupt(&id).await?;
    Ok((StatusCode::ACCEPTED, Json(sent)))
}

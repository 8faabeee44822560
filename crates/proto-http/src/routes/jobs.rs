//! Scheduled jobs: CRUD, run now, history.
//!
//! Besides the engine's `command` and `prompt` actions, a job created here
//! may be an `agent` job (A3S's `CRON_JOB_TYPE_AGENT`): it gets a thread of
//! its own, made as `POST /v1/threads` makes one from the action's
//! `model`, `workspace`, `instructions`, `agent` and `policy`, and each run
//! sends its `prompt` there as an unattended turn (what would ask for an
//! approval is refused and reported, never waited on). It reads back as
//! the `prompt` job it is, naming that thread, whose turns are its runs.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use gantry_core::{JobUpdate, NewJob};
use gantry_types::cron::JobAction;
use gantry_types::{ThreadId, ThreadSettingsPatch};
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::threads::{new_thread, required};
use super::{Answer, Created};
use crate::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::extract::Query;
use crate::views::{NewThread, Object, Objects, to_json};

/// `POST /v1/jobs`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobRequest {
    /// A unique name.
    name: String,
    /// A cron expression or English (`every 5 minutes`).
    schedule: String,
    /// What it runs: `{"kind": "command", "command", "cwd"?}`,
    /// `{"kind": "prompt", "thread_id", "prompt"}`, or `{"kind": "agent",
    /// "prompt", "model"?, "workspace"?, "instructions"?, "agent"?,
    /// "policy"?}` (a thread of its own).
    #[schema(value_type = Object)]
    action: Value,
    /// Time limit of one run, in milliseconds.
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// `PATCH /v1/jobs/{id}`: what to change.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobPatch {
    /// A new name.
    #[serde(default)]
    name: Option<String>,
    /// A new schedule.
    #[serde(default)]
    schedule: Option<String>,
    /// A new action (`agent`: a new prompt, and the model or instructions
    /// of the job's thread where given).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    action: Option<Value>,
    /// A new time limit.
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// `active` or `paused`.
    #[serde(default)]
    status: Option<String>,
}

/// What a job runs, as this API takes it.
enum Action {
    /// One of the engine's.
    Engine(JobAction),
    /// A prompt to a thread made for the job.
    Agent(AgentAction),
}

/// `{"kind": "agent", ...}`: the prompt and the thread it runs in.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentAction {
    /// Always `agent`.
    #[allow(dead_code)]
    kind: String,
    /// What each run asks.
    prompt: String,
    /// The thread's model [default: the server's].
    #[serde(default)]
    model: Option<String>,
    /// The thread's workspace [default: the server's].
    #[serde(default)]
    workspace: Option<String>,
    /// The thread's instructions.
    #[serde(default)]
    instructions: Option<String>,
    /// The agent the thread is made from.
    #[serde(default)]
    agent: Option<String>,
    /// The thread's policy (the engine's `ThreadPolicy` JSON).
    #[serde(default)]
    policy: Option<Value>,
}

fn action(value: Value) -> Result<Action, ApiError> {
    let invalid =
        |e: serde_json::Error| ApiError::validation(Some("action"), format!("action: {e}"));
    if value.get("kind").and_then(Value::as_str) != Some("agent") {
        return serde_json::from_value(value)
            .map(Action::Engine)
            .map_err(invalid);
    }
    let agent: AgentAction = serde_json::from_value(value).map_err(invalid)?;
    if agent.prompt.trim().is_empty() {
        return Err(ApiError::validation(
            Some("action"),
            "action: an agent job's prompt is empty",
        ));
    }
    Ok(Action::Agent(agent))
}

/// The field an engine refusal of a job names.
fn job_error(e: gantry_core::EngineError) -> ApiError {
    let error = ApiError::from(e);
    if error.status() != StatusCode::UNPROCESSABLE_ENTITY {
        return error;
    }
    if error.mentions("already exists") {
        return error.into_conflict();
    }
    let field = ["schedule", "timeout", "name"]
        .into_iter()
        .find(|f| error.mentions(f))
        .map(|f| if f == "timeout" { "timeout_ms" } else { f });
    match field {
        Some(f) => error.with_field(f),
        None => error,
    }
}

/// Every job.
#[utoipa::path(get, path = "/v1/jobs", tag = "jobs", responses((status = 200, body = Objects)))]
pub(crate) async fn list(State(state): State<AppState>) -> Answer<Objects> {
    let jobs = state.engine.jobs().list().await?;
    Ok(Json(Objects {
        items: jobs.iter().map(to_json).collect(),
    }))
}

/// Create a job.
#[utoipa::path(post, path = "/v1/jobs", tag = "jobs", request_body = JobRequest,
    responses((status = 201, body = Object),
        (status = 409, description = "A job of that name exists", body = ErrorBody),
        (status = 422, description = "A bad field", body = ErrorBody)))]
pub(crate) async fn create(State(state): State<AppState>, bytes: Bytes) -> Created<Object> {
    let req: JobRequest = required(&bytes)?;
    let jobs = state.engine.jobs();
    let (action, made) = match action(req.action)? {
        Action::Engine(action) => (action, None),
        Action::Agent(agent) => {
            // Refused before a thread is made for it.
            if jobs.by_name(&req.name).await.is_ok() {
                return Err(ApiError::conflict(format!(
                    "a job named `{}` already exists; choose another name",
                    req.name
                )));
            }
            let thread = new_thread(
                &state,
                NewThread {
                    workspace: agent.workspace,
                    model: agent.model,
                    agent: agent.agent,
                    policy: agent.policy,
                    name: Some(format!("job {}", req.name)),
                    instructions: agent.instructions,
                },
            )
            .await
            .map_err(|e| e.in_field("action"))?;
            let action = JobAction::Prompt {
                thread_id: thread.id.clone(),
                prompt: agent.prompt,
            };
            (action, Some(thread.id))
        }
    };
    let job = NewJob {
        name: req.name,
        schedule: req.schedule,
        action,
        timeout_ms: req.timeout_ms,
    };
    match jobs.create(job).await {
        Ok(job) => Ok((StatusCode::CREATED, Json(Object(to_json(&job))))),
        Err(e) => {
            // A refused job leaves no thread behind.
            if let Some(thread) = made {
                let _ = state.engine.threads().delete(&thread).await;
            }
            Err(job_error(e))
        }
    }
}

/// One job.
#[utoipa::path(get, path = "/v1/jobs/{id}", tag = "jobs",
    params(("id" = String, Path, description = "Job id")),
    responses((status = 200, body = Object), (status = 404, description = "No such job", body = ErrorBody)))]
pub(crate) async fn get(State(state): State<AppState>, Path(id): Path<String>) -> Answer<Object> {
    let job = state.engine.jobs().get(&id).await?;
    Ok(Json(Object(to_json(&job))))
}

/// Change a job, pause or resume it.
#[utoipa::path(patch, path = "/v1/jobs/{id}", tag = "jobs",
    params(("id" = String, Path, description = "Job id")), request_body = JobPatch,
    responses((status = 200, body = Object),
        (status = 404, description = "No such job", body = ErrorBody),
        (status = 422, description = "A bad field", body = ErrorBody)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Answer<Object> {
    let patch: JobPatch = required(&bytes)?;
    let jobs = state.engine.jobs();
    let action = match patch.action.map(action).transpose()? {
        None => None,
        Some(Action::Engine(action)) => Some(action),
        Some(Action::Agent(agent)) => Some(agent_update(&state, &id, agent).await?),
    };
    let update = JobUpdate {
        name: patch.name,
        schedule: patch.schedule,
        action,
        timeout_ms: patch.timeout_ms,
    };
    let changes = update.name.is_some()
        || update.schedule.is_some()
        || update.action.is_some()
        || update.timeout_ms.is_some();
    let mut job = if changes {
        jobs.update(&id, update).await.map_err(job_error)?
    } else {
        jobs.get(&id).await?
    };
    match patch.status.as_deref() {
        None => {}
        Some("paused") => job = jobs.pause(&id).await?,
        Some("active") => job = jobs.resume(&id).await?,
        Some(other) => {
            return Err(ApiError::validation(
                Some("status"),
                format!("status: `{other}` is not active or paused"),
            ));
        }
    }
    Ok(Json(Object(to_json(&job))))
}

/// An agent job's new prompt, its thread's model and instructions changed
/// where given. Its thread stays: its turns are the job's runs so far.
async fn agent_update(
    state: &AppState,
    id: &str,
    agent: AgentAction,
) -> Result<JobAction, ApiError> {
    let job = state.engine.jobs().get(id).await?;
    let JobAction::Prompt { thread_id, .. } = job.action else {
        return Err(ApiError::validation(
            Some("action"),
            "action: a command job cannot become an agent job; make a new job",
        ));
    };
    if agent.workspace.is_some() || agent.agent.is_some() || agent.policy.is_some() {
        return Err(ApiError::validation(
            Some("action"),
            "action: an agent job's workspace, agent and policy are its thread's; only its \
             prompt, model and instructions change",
        ));
    }
    if let Some(model) = agent.model.as_deref()
        && let Err(e) = state.engine.providers().check_model(model)
    {
        return Err(ApiError::validation(
            Some("action"),
            format!("action: model: {e}"),
        ));
    }
    if agent.model.is_some() || agent.instructions.is_some() {
        let patch = ThreadSettingsPatch {
            model: agent.model,
            instructions: agent.instructions.map(Some),
            ..ThreadSettingsPatch::default()
        };
        state.engine.threads().configure(&thread_id, patch).await?;
    }
    Ok(JobAction::Prompt {
        thread_id: ThreadId::clone(&thread_id),
        prompt: agent.prompt,
    })
}

/// Delete a job.
#[utoipa::path(delete, path = "/v1/jobs/{id}", tag = "jobs",
    params(("id" = String, Path, description = "Job id")),
    responses((status = 204, description = "Deleted"), (status = 404, description = "No such job", body = ErrorBody)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.engine.jobs().delete(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Run a job now; answers the run once it ended.
#[utoipa::path(post, path = "/v1/jobs/{id}/run", tag = "jobs",
    params(("id" = String, Path, description = "Job id")),
    responses((status = 200, body = Object),
        (status = 404, description = "No such job", body = ErrorBody),
        (status = 409, description = "It is running", body = ErrorBody)))]
pub(crate) async fn run_now(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<Object> {
    let run = state.engine.jobs().run_now(&id).await?;
    Ok(Json(Object(to_json(&run))))
}

/// `GET /v1/jobs/{id}/runs`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct HistoryQuery {
    /// Runs to return, newest first [default: the engine's].
    #[serde(default)]
    limit: Option<u32>,
}

/// A job's past runs, newest first.
#[utoipa::path(get, path = "/v1/jobs/{id}/runs", tag = "jobs",
    params(("id" = String, Path, description = "Job id"), HistoryQuery),
    responses((status = 200, body = Objects), (status = 404, description = "No such job", body = ErrorBody)))]
pub(crate) async fn history(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<HistoryQuery>,
) -> Answer<Objects> {
    let runs = state.engine.jobs().history(&id, query.limit).await?;
    Ok(Json(Objects {
        items: runs.iter().map(to_json).collect(),
    }))
}

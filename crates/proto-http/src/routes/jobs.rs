//! Scheduled jobs: CRUD, run now, history.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use gantry_core::{JobUpdate, NewJob};
use gantry_types::cron::JobAction;
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::threads::required;
use super::{Answer, Created};
use crate::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::extract::Query;
use crate::views::{Object, Objects, to_json};

/// `POST /v1/jobs`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobRequest {
    /// A unique name.
    name: String,
    /// A cron expression or English (`every 5 minutes`).
    schedule: String,
    /// What it runs: `{"kind": "command", "command", "cwd"?}` or
    /// `{"kind": "prompt", "prompt", ...}`.
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
    /// A new action.
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

fn action(value: Value) -> Result<JobAction, ApiError> {
    serde_json::from_value(value)
        .map_err(|e| ApiError::validation(Some("action"), format!("action: {e}")))
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
    let job = NewJob {
        name: req.name,
        schedule: req.schedule,
        action: action(req.action)?,
        timeout_ms: req.timeout_ms,
    };
    let job = state.engine.jobs().create(job).await.map_err(job_error)?;
    Ok((StatusCode::CREATED, Json(Object(to_json(&job)))))
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
    let update = JobUpdate {
        name: patch.name,
        schedule: patch.schedule,
        action: patch.action.map(action).transpose()?,
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

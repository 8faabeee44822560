//! Threads: create, list, read, fork, archive, delete; and the health check.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use gantry_core::{CreateThread, ThreadQuery};
use gantry_types::{AgentId, Thread, ThreadId, ThreadPolicy, TurnId, UserInputOffer};
use serde::Deserialize;
use utoipa::IntoParams;

use super::{Answer, Created};
use crate::AppState;
use crate::error::{ApiError, ErrorBody, body, optional_body};
use crate::extract::Query;
use crate::views::{ForkRequest, Health, NewThread, ThreadDetail, ThreadList, ThreadSummary};

/// Is the server up.
#[utoipa::path(get, path = "/healthz", tag = "meta", security(()),
    responses((status = 200, body = Health)))]
pub(crate) async fn health() -> Json<Health> {
    Json(Health {
        status: "ok".to_owned(),
        api: "v1".to_owned(),
    })
}

/// `GET /v1/threads` filters and paging.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    /// `true`: only archived; `false` (default): only not archived; `all`.
    #[serde(default)]
    archived: Option<String>,
    /// Only threads with this status (`idle`, `running`, `failed`).
    #[serde(default)]
    status: Option<String>,
    /// Page size, 1 to 200 [default: 50].
    #[serde(default)]
    limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    #[serde(default)]
    cursor: Option<String>,
}

/// List threads, newest first.
#[utoipa::path(get, path = "/v1/threads", tag = "threads", params(ListQuery),
    responses((status = 200, body = ThreadList),
        (status = 422, description = "A bad filter", body = ErrorBody)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    Query(query): Query<ListQuery>,
) -> Answer<ThreadList> {
    let archived = match query.archived.as_deref() {
        None | Some("false") => Some(false),
        Some("true") => Some(true),
        Some("all") => None,
        Some(other) => {
            return Err(ApiError::validation(
                Some("archived"),
                format!("archived: `{other}` is not true, false or all"),
            ));
        }
    };
    if let Some(status) = query.status.as_deref()
        && !matches!(status, "idle" | "running" | "failed")
    {
        return Err(ApiError::validation(
            Some("status"),
            format!("status: `{status}` is not idle, running or failed"),
        ));
    }
    let limit = query.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::validation(
            Some("limit"),
            format!("limit: {limit} is not between 1 and 200"),
        ));
    }
    let page = state
        .engine
        .threads()
        .list(&ThreadQuery {
            archived,
            limit,
            cursor: query.cursor,
        })
        .await
        .map_err(|e| match e {
            gantry_core::EngineError::Store(s) if s.to_string().contains("cursor") => {
                ApiError::validation(Some("cursor"), "cursor: not one this server handed out")
            }
            other => other.into(),
        })?;
    let threads = page
        .threads
        .iter()
        .map(ThreadSummary::from)
        .filter(|t| query.status.as_deref().is_none_or(|s| t.status == s))
        .collect();
    Ok(Json(ThreadList {
        threads,
        next_cursor: page.next_cursor,
    }))
}

/// Start a thread.
#[utoipa::path(post, path = "/v1/threads", tag = "threads", request_body = NewThread,
    responses((status = 201, body = ThreadSummary),
        (status = 404, description = "No such agent", body = ErrorBody),
        (status = 422, description = "A bad field", body = ErrorBody)))]
pub(crate) async fn create(State(state): State<AppState>, bytes: Bytes) -> Created<ThreadSummary> {
    let new: NewThread = optional_body(&bytes)?;
    let thread = new_thread(&state, new).await?;
    Ok((StatusCode::CREATED, Json(ThreadSummary::from(&thread))))
}

/// Makes a thread as `POST /v1/threads` does (an agent job's too), with
/// errors that name the field at fault.
pub(crate) async fn new_thread(state: &AppState, new: NewThread) -> Result<Thread, ApiError> {
    let names_offer = new
        .policy
        .as_ref()
        .and_then(|p| p.get("user_input"))
        .and_then(|u| u.get("offer"))
        .is_some();
    let mut policy = match new.policy {
        Some(policy) => serde_json::from_value::<ThreadPolicy>(policy)
            .map_err(|e| ApiError::validation(Some("policy"), format!("policy: {e}")))?,
        None => ThreadPolicy::default(),
    };
    // This API answers the model's questions: its threads are offered
    // them when their approval policy asks a human, unless told otherwise.
    if !names_offer {
        policy.user_input.offer = UserInputOffer::Auto;
    }
    // The engine refuses it too; here the error names the field.
    state
        .engine
        .config()
        .check_sandbox(policy.sandbox)
        .map_err(|e| ApiError::validation(Some("policy"), format!("policy: {e}")))?;
    let cwd = match new.workspace {
        Some(dir) if !dir.trim().is_empty() => dir.into(),
        Some(_) => {
            return Err(ApiError::validation(
                Some("workspace"),
                "workspace: give a directory",
            ));
        }
        None => (*state.workspace).clone(),
    };
    if let Some(model) = new.model.as_deref().filter(|m| !m.trim().is_empty())
        && let Err(e) = state.engine.providers().check_model(model)
    {
        return Err(ApiError::validation(Some("model"), format!("model: {e}")));
    }
    let params = CreateThread {
        cwd,
        model: new.model,
        agent: new.agent.map(AgentId),
        policy,
        name: new.name,
        instructions: new.instructions,
        ..CreateThread::default()
    };
    state.engine.threads().create(params).await.map_err(|e| {
        let error = ApiError::from(e);
        if error.status() == StatusCode::UNPROCESSABLE_ENTITY && error.mentions("workspace") {
            error.with_field("workspace")
        } else {
            error
        }
    })
}

/// A thread with its turns and items.
#[utoipa::path(get, path = "/v1/threads/{id}", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = ThreadDetail),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn read(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<ThreadDetail> {
    let view = state.engine.threads().read(&ThreadId(id)).await?;
    Ok(Json(ThreadDetail::from(view.as_ref())))
}

/// Fork a thread up to a turn (default: its last ended turn), or at a
/// checkpoint: a new workspace directory with the checkpoint's files.
#[utoipa::path(post, path = "/v1/threads/{id}/fork", tag = "threads",
    params(("id" = String, Path, description = "Thread id")), request_body = ForkRequest,
    responses((status = 201, body = ThreadSummary),
        (status = 404, description = "No such thread, turn or checkpoint", body = ErrorBody),
        (status = 422, description = "Inside a running turn, or both a turn and a checkpoint",
            body = ErrorBody)))]
pub(crate) async fn fork(
    State(state): State<AppState>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Created<ThreadSummary> {
    let req: ForkRequest = optional_body(&bytes)?;
    let threads = state.engine.threads();
    let thread = match (req.checkpoint, req.up_to_turn) {
        (Some(_), Some(_)) => {
            return Err(ApiError::validation(
                Some("checkpoint"),
                "fork at a checkpoint or up to a turn, not both",
            ));
        }
        (Some(checkpoint), None) => threads.fork_at(&ThreadId(id), &checkpoint).await?,
        (None, up_to) => {
            let up_to = up_to.map(TurnId);
            threads.fork(&ThreadId(id), up_to.as_ref()).await?
        }
    };
    Ok((StatusCode::CREATED, Json(ThreadSummary::from(&thread))))
}

/// Archive a thread (hidden from the default list).
#[utoipa::path(post, path = "/v1/threads/{id}/archive", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = ThreadSummary),
        (status = 404, description = "No such thread", body = ErrorBody),
        (status = 409, description = "A turn is running", body = ErrorBody)))]
pub(crate) async fn archive(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<ThreadSummary> {
    let id = ThreadId(id);
    state.engine.threads().archive(&id).await?;
    summary(&state, &id).await
}

/// Delete a thread for good: its history, memories and MCP servers. A
/// thread running a turn is refused (interrupt it first); streams following
/// it end, and `GET /v1/events` says `thread_deleted`.
#[utoipa::path(delete, path = "/v1/threads/{id}", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such thread", body = ErrorBody),
        (status = 409, description = "A turn is running", body = ErrorBody)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.engine.threads().delete(&ThreadId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Unarchive a thread.
#[utoipa::path(post, path = "/v1/threads/{id}/unarchive", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = ThreadSummary),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn unarchive(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<ThreadSummary> {
    let id = ThreadId(id);
    state.engine.threads().unarchive(&id).await?;
    summary(&state, &id).await
}

/// The thread's summary as it is now.
pub(super) async fn summary(state: &AppState, id: &ThreadId) -> Answer<ThreadSummary> {
    let view = state.engine.threads().read(id).await?;
    Ok(Json(ThreadSummary::from(&view.thread)))
}

/// Reads a body that must be there (422 naming the field otherwise).
pub(super) fn required<T: serde::de::DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::validation(None, "a JSON body is required"));
    }
    body(bytes)
}

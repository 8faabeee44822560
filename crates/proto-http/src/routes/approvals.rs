//! Approvals (pending across threads, a thread's, answers) and external
//! tasks (pending, completed by the client).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use gantry_core::{ThreadQuery, projection};
use gantry_types::{ApprovalDecision, ThreadId, ThreadStatus};

use super::Answer;
use super::threads::required;
use crate::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::views::{
    ApprovalAnswer, ApprovalView, DecisionName, ExternalTaskView, Objects, TaskResult,
    pending_approvals, to_json,
};

/// Pages of running threads read for pending approvals, at most.
const MAX_PAGES: usize = 20;

/// Approvals waiting for an answer, across every running thread.
#[utoipa::path(get, path = "/v1/approvals", tag = "approvals",
    responses((status = 200, body = Vec<ApprovalView>)))]
pub(crate) async fn pending(State(state): State<AppState>) -> Answer<Vec<ApprovalView>> {
    let mut found = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let page = state
            .engine
            .threads()
            .list(&ThreadQuery {
                archived: None,
                limit: 200,
                cursor,
            })
            .await?;
        for thread in page
            .threads
            .iter()
            .filter(|t| t.status == ThreadStatus::Running)
        {
            // A thread that ended meanwhile has none; one gone is skipped.
            if let Ok(view) = state.engine.threads().read(&thread.id).await {
                found.extend(pending_approvals(&view));
            }
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok(Json(found))
}

/// Every approval a thread asked for, newest first, pending or answered.
#[utoipa::path(get, path = "/v1/threads/{id}/approvals", tag = "approvals",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = Vec<ApprovalView>),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn of_thread(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<Vec<ApprovalView>> {
    let view = state.engine.threads().read(&ThreadId(id)).await?;
    let all = projection::approvals(&view)
        .map(|a| ApprovalView {
            thread_id: view.thread.id.0.clone(),
            approval_id: a.approval_id.to_owned(),
            request: to_json(a.request),
            state: if a.answer.is_some() {
                "answered"
            } else {
                "pending"
            }
            .to_owned(),
        })
        .collect();
    Ok(Json(all))
}

/// Answer an approval: the first answer wins; a later one is 409.
#[utoipa::path(post, path = "/v1/threads/{id}/approvals/{approval_id}", tag = "approvals",
    params(("id" = String, Path, description = "Thread id"),
        ("approval_id" = String, Path, description = "Approval id")),
    request_body = ApprovalAnswer,
    responses((status = 200, body = ApprovalView, description = "Answered"),
        (status = 404, description = "No such thread or approval", body = ErrorBody),
        (status = 409, description = "Already answered", body = ErrorBody),
        (status = 422, description = "A bad decision", body = ErrorBody)))]
pub(crate) async fn answer(
    State(state): State<AppState>,
    Path((id, approval_id)): Path<(String, String)>,
    bytes: Bytes,
) -> Answer<ApprovalView> {
    let answer: ApprovalAnswer = required(&bytes)?;
    if answer.reason.is_some() && !matches!(answer.decision, DecisionName::Deny) {
        return Err(ApiError::validation(
            Some("reason"),
            "reason: only a `deny` takes a reason",
        ));
    }
    let decision = match answer.decision {
        DecisionName::Approve => ApprovalDecision::Approve,
        DecisionName::ApproveForSession => ApprovalDecision::ApproveForSession,
        DecisionName::Deny => ApprovalDecision::Deny {
            reason: answer.reason,
        },
        DecisionName::Abort => ApprovalDecision::Abort,
    };
    let thread = ThreadId(id);
    let view = state.engine.threads().read(&thread).await?;
    let Some(asked) = projection::approvals(&view).find(|a| a.approval_id == approval_id) else {
        return Err(ApiError::not_found(format!(
            "thread {thread} asked no approval {approval_id}"
        )));
    };
    let already = || ApiError::conflict(format!("approval {approval_id} was already answered"));
    if asked.answer.is_some() {
        return Err(already());
    }
    let request = to_json(asked.request);
    state
        .engine
        .safety()
        .resolve_approval(&thread, &approval_id, decision)
        .await
        .map_err(|e| match ApiError::from(e) {
            // Answered meanwhile (by another client, a timeout, an interrupt).
            e if e.status() == StatusCode::UNPROCESSABLE_ENTITY => already(),
            e => e,
        })?;
    Ok(Json(ApprovalView {
        thread_id: thread.0,
        approval_id,
        request,
        state: "answered".to_owned(),
    }))
}

/// External tasks the thread's running turn waits on.
#[utoipa::path(get, path = "/v1/threads/{id}/tasks", tag = "approvals",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = Vec<ExternalTaskView>),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn tasks(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<Vec<ExternalTaskView>> {
    let tasks = state
        .engine
        .safety()
        .pending_external_tasks(&ThreadId(id))
        .await?;
    Ok(Json(
        tasks
            .iter()
            .map(|t| ExternalTaskView {
                task_id: t.task_id.clone(),
                task: to_json(t),
            })
            .collect(),
    ))
}

/// Complete an external task with its output or its error.
#[utoipa::path(post, path = "/v1/threads/{id}/tasks/{task_id}", tag = "approvals",
    params(("id" = String, Path, description = "Thread id"),
        ("task_id" = String, Path, description = "Task id")),
    request_body = TaskResult,
    responses((status = 200, body = Objects, description = "The tasks still pending"),
        (status = 404, description = "No such thread or pending task", body = ErrorBody),
        (status = 422, description = "Neither or both of output and error", body = ErrorBody)))]
pub(crate) async fn complete(
    State(state): State<AppState>,
    Path((id, task_id)): Path<(String, String)>,
    bytes: Bytes,
) -> Answer<Objects> {
    let result: TaskResult = required(&bytes)?;
    let result = match (result.output, result.error) {
        (Some(output), None) => Ok(output),
        (None, Some(error)) => Err(error),
        _ => {
            return Err(ApiError::validation(
                Some("output"),
                "give exactly one of `output` and `error`",
            ));
        }
    };
    let thread = ThreadId(id);
    let pending = state
        .engine
        .safety()
        .pending_external_tasks(&thread)
        .await?;
    if !pending.iter().any(|t| t.task_id == task_id) {
        return Err(ApiError::not_found(format!(
            "thread {thread} waits on no task {task_id}"
        )));
    }
    state
        .engine
        .safety()
        .complete_external_task(&thread, &task_id, result)
        .await
        .map_err(|e| match ApiError::from(e) {
            e if e.status() == StatusCode::UNPROCESSABLE_ENTITY => {
                ApiError::conflict(format!("task {task_id} was already completed"))
            }
            e => e,
        })?;
    let left = state
        .engine
        .safety()
        .pending_external_tasks(&thread)
        .await?;
    Ok(Json(Objects {
        items: left.iter().map(to_json).collect(),
    }))
}

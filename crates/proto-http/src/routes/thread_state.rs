//! A thread's todos, goal, and usage; usage in total.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use gantry_core::ThreadQuery;
use gantry_types::{ThreadId, TodoItem, Usage};

use super::Answer;
use super::threads::required;
use crate::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::views::{GoalRequest, GoalView, TodoList, UsageReport, UsageView, to_json};

/// Pages of threads summed for the total usage, at most (200 each).
const MAX_PAGES: usize = 500;

/// The thread's task list.
#[utoipa::path(get, path = "/v1/threads/{id}/todos", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = TodoList),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn todos(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<TodoList> {
    let todos = state.engine.threads().todos(&ThreadId(id)).await?;
    Ok(Json(TodoList {
        todos: todos.iter().map(to_json).collect(),
    }))
}

/// Replace the thread's task list.
#[utoipa::path(put, path = "/v1/threads/{id}/todos", tag = "threads",
    params(("id" = String, Path, description = "Thread id")), request_body = TodoList,
    responses((status = 200, body = TodoList),
        (status = 404, description = "No such thread", body = ErrorBody),
        (status = 422, description = "A bad entry (ids unique, content present)", body = ErrorBody)))]
pub(crate) async fn set_todos(
    State(state): State<AppState>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Answer<TodoList> {
    let list: TodoList = required(&bytes)?;
    let mut todos = Vec::with_capacity(list.todos.len());
    for (i, value) in list.todos.into_iter().enumerate() {
        let todo: TodoItem = serde_json::from_value(value).map_err(|e| {
            ApiError::validation(Some(&format!("todos[{i}]")), format!("todos[{i}]: {e}"))
        })?;
        todos.push(todo);
    }
    let id = ThreadId(id);
    state
        .engine
        .threads()
        .set_todos(&id, todos)
        .await
        .map_err(|e| ApiError::from(e).with_field("todos"))?;
    todos_of(&state, id).await
}

async fn todos_of(state: &AppState, id: ThreadId) -> Answer<TodoList> {
    let todos = state.engine.threads().todos(&id).await?;
    Ok(Json(TodoList {
        todos: todos.iter().map(to_json).collect(),
    }))
}

/// The thread's goal.
#[utoipa::path(get, path = "/v1/threads/{id}/goal", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = GoalView),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn goal(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<GoalView> {
    let goal = state.engine.goals().get(&ThreadId(id)).await?;
    Ok(Json(GoalView {
        goal: goal.as_ref().map(to_json),
    }))
}

/// Set the thread's goal.
#[utoipa::path(put, path = "/v1/threads/{id}/goal", tag = "threads",
    params(("id" = String, Path, description = "Thread id")), request_body = GoalRequest,
    responses((status = 200, body = GoalView),
        (status = 404, description = "No such thread", body = ErrorBody),
        (status = 422, description = "An empty objective or a zero budget", body = ErrorBody)))]
pub(crate) async fn set_goal(
    State(state): State<AppState>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Answer<GoalView> {
    let req: GoalRequest = required(&bytes)?;
    let goal = state
        .engine
        .goals()
        .set(&ThreadId(id), req.objective, req.token_budget)
        .await
        .map_err(|e| {
            let error = ApiError::from(e);
            let field = if error.mentions("budget") {
                "token_budget"
            } else {
                "objective"
            };
            error.with_field(field)
        })?;
    Ok(Json(GoalView {
        goal: Some(to_json(&goal)),
    }))
}

/// Clear the thread's goal; answers the goal it had.
#[utoipa::path(delete, path = "/v1/threads/{id}/goal", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = GoalView),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn clear_goal(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<GoalView> {
    let goal = state.engine.goals().clear(&ThreadId(id)).await?;
    Ok(Json(GoalView {
        goal: goal.as_ref().map(to_json),
    }))
}

/// The thread's tokens and cost.
#[utoipa::path(get, path = "/v1/threads/{id}/usage", tag = "usage",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = UsageReport),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn usage(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<UsageReport> {
    let view = state.engine.threads().read(&ThreadId(id)).await?;
    Ok(Json(UsageReport {
        usage: UsageView::from(&view.thread.usage),
        cost_usd: view.thread.cost_usd,
        threads: 1,
    }))
}

/// Tokens and cost of every thread, archived ones included.
#[utoipa::path(get, path = "/v1/usage", tag = "usage",
    responses((status = 200, body = UsageReport)))]
pub(crate) async fn total_usage(State(state): State<AppState>) -> Answer<UsageReport> {
    let mut usage = Usage::default();
    let mut cost_usd = 0.0;
    let mut threads = 0;
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
        for thread in &page.threads {
            usage.add(&thread.usage);
            cost_usd += thread.cost_usd;
            threads += 1;
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok(Json(UsageReport {
        usage: UsageView::from(&usage),
        cost_usd,
        threads,
    }))
}

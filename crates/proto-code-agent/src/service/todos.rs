//! The session's todo list: the list the model keeps with its `todo_write`
//! tool, read and replaced by clients.

use gantry_grpc::clip;
use gantry_types::{TodoItem, TodoPriority, TodoStatus};
use tonic::Status;

use super::Ctx;
use crate::pb;
use crate::status::{required, session_id, status};

/// `GetTodos`: the session's todo list, in its order.
pub(crate) async fn get_todos(
    ctx: &Ctx,
    req: pb::GetTodosRequest,
) -> Result<pb::GetTodosResponse, Status> {
    let id = session_id(&req.session_id)?;
    let todos = ctx.engine.threads().todos(&id).await.map_err(status)?;
    Ok(pb::GetTodosResponse {
        todos: todos.into_iter().map(todo).collect(),
    })
}

/// `SetTodos`: replaces the whole list (an empty list clears it) and
/// returns it as stored. Every todo needs an id (unique in the list) and
/// content; an empty status is `pending`, an empty priority `medium`.
pub(crate) async fn set_todos(
    ctx: &Ctx,
    req: pb::SetTodosRequest,
) -> Result<pb::SetTodosResponse, Status> {
    let id = session_id(&req.session_id)?;
    let todos = req
        .todos
        .iter()
        .enumerate()
        .map(|(i, t)| todo_item(i, t))
        .collect::<Result<Vec<_>, _>>()?;
    unique_ids(&todos)?;
    ctx.engine
        .threads()
        .set_todos(&id, todos)
        .await
        .map_err(status)?;
    let stored = ctx.engine.threads().todos(&id).await.map_err(status)?;
    Ok(pb::SetTodosResponse {
        success: true,
        todos: stored.into_iter().map(todo).collect(),
    })
}

/// The `i`th todo of a request, checked field by field.
fn todo_item(i: usize, todo: &pb::Todo) -> Result<TodoItem, Status> {
    let status = match word(&todo.status).as_str() {
        "" | "pending" => TodoStatus::Pending,
        "in_progress" => TodoStatus::InProgress,
        "completed" => TodoStatus::Completed,
        "cancelled" => TodoStatus::Cancelled,
        other => {
            return Err(Status::invalid_argument(format!(
                "todos[{i}].status: `{other}` is not pending, in_progress, completed or cancelled",
                other = clip(other)
            )));
        }
    };
    let priority = match word(&todo.priority).as_str() {
        "high" => TodoPriority::High,
        "" | "medium" => TodoPriority::Medium,
        "low" => TodoPriority::Low,
        other => {
            return Err(Status::invalid_argument(format!(
                "todos[{i}].priority: `{other}` is not high, medium or low",
                other = clip(other)
            )));
        }
    };
    Ok(TodoItem {
        id: required(&format!("todos[{i}].id"), &todo.id)?.to_owned(),
        content: required(&format!("todos[{i}].content"), &todo.content)?.to_owned(),
        status,
        priority,
    })
}

/// Refuses a list that uses an id twice, naming the second use.
fn unique_ids(todos: &[TodoItem]) -> Result<(), Status> {
    let mut seen = std::collections::HashSet::new();
    for (i, t) in todos.iter().enumerate() {
        if !seen.insert(t.id.as_str()) {
            return Err(Status::invalid_argument(format!(
                "todos[{i}].id: `{}` is used twice; ids must be unique",
                clip(&t.id)
            )));
        }
    }
    Ok(())
}

/// An enum word as clients may send it: any case, surrounding blanks.
fn word(value: &str) -> String {
    value.trim().to_ascii_lowercase()
}

/// A todo as the proto's `Todo`.
fn todo(item: TodoItem) -> pb::Todo {
    let status = match item.status {
        TodoStatus::Pending => "pending",
        TodoStatus::InProgress => "in_progress",
        TodoStatus::Completed => "completed",
        TodoStatus::Cancelled => "cancelled",
    };
    let priority = match item.priority {
        TodoPriority::High => "high",
        TodoPriority::Medium => "medium",
        TodoPriority::Low => "low",
    };
    pb::Todo {
        id: item.id,
        content: item.content,
        status: status.to_owned(),
        priority: priority.to_owned(),
    }
}

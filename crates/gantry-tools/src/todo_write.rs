//! `todo_write`: the agent keeps its task list. Each call replaces the whole
//! list; the engine stores it with the thread.

use async_trait::async_trait;
use gantry_types::{ItemKind, TodoItem, TodoStatus, ToolSpec, validate_todos};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::parse_args;
use crate::{Tool, ToolContext, ToolOutput, ToolStatus};

const NAME: &str = "todo_write";

/// The `todo_write` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TodoWriteTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TodoArgs {
    todos: Vec<TodoItem>,
}

#[async_trait]
impl Tool for TodoWriteTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Replace your task list for this thread. Use it to plan multi-step work \
                          and to mark progress: keep one task in_progress at a time, mark tasks \
                          completed as soon as they are done. Send the whole list every time."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string", "description": "Stable, unique id."},
                                "content": {"type": "string", "description": "What to do."},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"]},
                                "priority": {"type": "string", "enum": ["high", "medium", "low"]}
                            },
                            "required": ["id", "content", "status"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["todos"],
                "additionalProperties": false
            }),
        }
    }

    fn start_item(&self, _args: &Value, _ctx: &ToolContext) -> ItemKind {
        ItemKind::TodoList { todos: Vec::new() }
    }

    async fn run(&self, args: Value, _ctx: ToolContext) -> ToolOutput {
        let todos = parse_args::<TodoArgs>(NAME, &args).and_then(|a| {
            validate_todos(&a.todos)
                .map(|()| a.todos)
                .map_err(|e| format!("{NAME}: {e}"))
        });
        match todos {
            Ok(todos) => ToolOutput {
                status: ToolStatus::Ok,
                model_output: summary(&todos),
                item: ItemKind::TodoList { todos },
            },
            Err(message) => ToolOutput {
                status: ToolStatus::Error,
                model_output: message,
                item: ItemKind::TodoList { todos: Vec::new() },
            },
        }
    }
}

/// "Task list updated: 4 tasks (1 in progress, 2 completed, 1 pending)."
fn summary(todos: &[TodoItem]) -> String {
    let count = |s: TodoStatus| todos.iter().filter(|t| t.status == s).count();
    format!(
        "Task list updated: {} tasks ({} in progress, {} completed, {} pending, {} cancelled).",
        todos.len(),
        count(TodoStatus::InProgress),
        count(TodoStatus::Completed),
        count(TodoStatus::Pending),
        count(TodoStatus::Cancelled)
    )
}

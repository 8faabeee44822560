//! The agent's task list for a thread.

use serde::{Deserialize, Serialize};

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    #[default]
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
    /// Dropped.
    Cancelled,
}

/// How much a task matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoPriority {
    /// Do first.
    High,
    /// The default.
    #[default]
    Medium,
    /// When there is time.
    Low,
}

/// One task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// Stable id, unique in the list.
    pub id: String,
    /// What to do.
    pub content: String,
    /// Where it is.
    #[serde(default)]
    pub status: TodoStatus,
    /// How much it matters.
    #[serde(default)]
    pub priority: TodoPriority,
}

/// Checks a list: ids present and unique, content present. The error says
/// which entry is wrong.
pub fn validate_todos(todos: &[TodoItem]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for (i, t) in todos.iter().enumerate() {
        if t.id.trim().is_empty() {
            return Err(format!("todo #{} has an empty id", i + 1));
        }
        if t.content.trim().is_empty() {
            return Err(format!("todo `{}` has empty content", t.id));
        }
        if !seen.insert(t.id.as_str()) {
            return Err(format!(
                "todo id `{}` appears twice; ids must be unique",
                t.id
            ));
        }
    }
    Ok(())
}

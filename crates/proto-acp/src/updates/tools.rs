//! What a tool call is, for an editor: its kind, a title, the files it
//! touches (absolute paths), from Gantry's tool name and arguments.

use std::path::Path;

use gantry_types::{TodoItem, TodoPriority, TodoStatus};
use serde_json::Value;

use crate::wire::{PlanEntry, ToolCallLocation, ToolKind};

/// A tool call as an editor shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Described {
    pub kind: ToolKind,
    pub title: String,
    pub locations: Vec<ToolCallLocation>,
}

/// Describes a call of `tool` with `args` in the workspace `cwd`.
pub(crate) fn describe(tool: &str, args: &Value, cwd: &str) -> Described {
    let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default();
    let at = |path: &str| {
        if path.is_empty() {
            Vec::new()
        } else {
            vec![ToolCallLocation {
                path: absolute(cwd, path),
                line: args
                    .get("offset")
                    .and_then(Value::as_u64)
                    .and_then(|l| u32::try_from(l).ok()),
            }]
        }
    };
    let (kind, title, locations) = match tool {
        "shell" => (ToolKind::Execute, text("command").to_owned(), Vec::new()),
        "read_file" => (
            ToolKind::Read,
            format!("Read {}", text("path")),
            at(text("path")),
        ),
        "write_file" => (
            ToolKind::Edit,
            format!("Write {}", text("path")),
            at(text("path")),
        ),
        "edit_file" => (
            ToolKind::Edit,
            format!("Edit {}", text("path")),
            at(text("path")),
        ),
        "list_dir" => {
            let path = match text("path") {
                "" => ".",
                p => p,
            };
            (ToolKind::Search, format!("List {path}"), at(path))
        }
        "glob" => (
            ToolKind::Search,
            format!("Find {}", text("pattern")),
            Vec::new(),
        ),
        "grep" => (
            ToolKind::Search,
            format!("Search for {}", text("pattern")),
            at(text("path")),
        ),
        "todo_write" => (ToolKind::Think, "Update the plan".to_owned(), Vec::new()),
        "recall" => (ToolKind::Search, "Recall memories".to_owned(), Vec::new()),
        "remember" => (ToolKind::Other, "Remember".to_owned(), Vec::new()),
        gantry_core::REQUEST_USER_INPUT => (ToolKind::Other, ask_title(args), Vec::new()),
        "skill" => (
            ToolKind::Read,
            format!("Load skill {}", text("name")),
            Vec::new(),
        ),
        name if name.starts_with("lsp_") => (ToolKind::Search, name.to_owned(), at(text("path"))),
        name => match name.strip_prefix("mcp__").and_then(|r| r.split_once("__")) {
            Some((server, tool)) => (ToolKind::Other, format!("{server}: {tool}"), Vec::new()),
            None => (ToolKind::Other, name.to_owned(), Vec::new()),
        },
    };
    let title = if title.trim().is_empty() {
        tool.to_owned()
    } else {
        title
    };
    Described {
        kind,
        title,
        locations,
    }
}

/// "Ask: Database, Targets" from a `request_user_input` call's headers.
fn ask_title(args: &Value) -> String {
    let headers: Vec<&str> = args
        .get("questions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|q| q.get("header").and_then(Value::as_str))
        .collect();
    format!("Ask: {}", headers.join(", "))
}

/// `path` (relative to the workspace or absolute) as an absolute path.
pub(crate) fn absolute(cwd: &str, path: &str) -> String {
    Path::new(cwd).join(path).to_string_lossy().into_owned()
}

/// The task list as a plan (cancelled tasks are left out: a plan entry is
/// pending, in progress or completed).
pub(crate) fn plan_entries(todos: &[TodoItem]) -> Vec<PlanEntry> {
    todos
        .iter()
        .filter_map(|t| {
            let status = match t.status {
                TodoStatus::Pending => "pending",
                TodoStatus::InProgress => "in_progress",
                TodoStatus::Completed => "completed",
                TodoStatus::Cancelled => return None,
            };
            let priority = match t.priority {
                TodoPriority::High => "high",
                TodoPriority::Medium => "medium",
                TodoPriority::Low => "low",
            };
            Some(PlanEntry {
                content: t.content.clone(),
                priority,
                status,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_tools_name_their_file_by_its_absolute_path() {
        let d = describe("edit_file", &json!({"path": "src/a.rs"}), "/w");
        assert_eq!(d.kind, ToolKind::Edit);
        assert_eq!(d.title, "Edit src/a.rs");
        assert_eq!(d.locations[0].path, "/w/src/a.rs");
        let abs = describe("read_file", &json!({"path": "/w/b.rs", "offset": 3}), "/w");
        assert_eq!(abs.locations[0].path, "/w/b.rs");
        assert_eq!(abs.locations[0].line, Some(3));
    }

    #[test]
    fn commands_execute_and_mcp_tools_name_their_server() {
        let d = describe("shell", &json!({"command": "cargo test"}), "/w");
        assert_eq!(
            (d.kind, d.title.as_str()),
            (ToolKind::Execute, "cargo test")
        );
        let m = describe("mcp__files__echo", &json!({}), "/w");
        assert_eq!(m.title, "files: echo");
        assert_eq!(
            describe("grep", &json!({"pattern": "x"}), "/w").kind,
            ToolKind::Search
        );
    }
}

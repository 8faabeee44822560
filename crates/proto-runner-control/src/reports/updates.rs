//! Engine turns and items as the protocol's `TurnUpdate`s and
//! `ItemUpdate`s, in the shape CompanyHelm's runner (v0.3.0) gives codex's:
//! the same item types, the same one-line texts (a command's is its command
//! line, an empty message is `Agent message`, a file change says its status
//! and paths), the same `unknown` for a process not started yet. What codex
//! has no type for (approvals, external tasks, structured output, errors,
//! built-in tool calls) travels as `ITEM_TYPE_UNKNOWN` with a line saying
//! what it is, as that runner sends codex's types it does not know.

use gantry_runner_protocol::ProtocolVersion;
use gantry_runner_protocol::messages::{
    ClientMessage, CommandExecutionItem, ItemStatus as WireItemStatus, ItemType, ItemUpdate,
    Payload, TurnStatus as WireTurnStatus, TurnUpdate,
};
use gantry_types::{ApprovalDecision, Item, ItemKind, ItemStatus, ThreadId, TurnId};

/// What a command's `process_id` says before its process started (and for
/// one that never did), as CompanyHelm's runner says it.
pub(crate) const NO_PROCESS: &str = "unknown";

/// The longest summary an update carries: a user's message, reasoning, a
/// line on an item codex has no type for (CompanyHelm's runner cuts its
/// summaries there too; an agent's answer goes whole).
const MAX_TEXT: usize = 800;

/// A turn update for `turn` of `thread`.
pub(crate) fn turn_update(
    request_id: Option<String>,
    thread: &ThreadId,
    turn: &TurnId,
    status: WireTurnStatus,
) -> ClientMessage {
    ClientMessage {
        request_id,
        payload: Payload::Turn(TurnUpdate {
            sdk_turn_id: turn.to_string(),
            status,
            thread_id: Some(thread.to_string()),
        }),
    }
}

/// The item update for an item of `thread`, or `None` for an item the
/// version has no use for (0.2.0 has no plan: todo lists stay the runner's).
pub(crate) fn item_update(
    item: &Item,
    thread: &ThreadId,
    request_id: Option<String>,
    version: ProtocolVersion,
) -> Option<ClientMessage> {
    let status = match item.status {
        ItemStatus::InProgress => WireItemStatus::Running,
        _ => WireItemStatus::Completed,
    };
    let (item_type, text, command) = match &item.kind {
        ItemKind::UserMessage { text, .. } => {
            (ItemType::UserMessage, cut(or(text, "User message")), None)
        }
        ItemKind::AgentMessage { text } => {
            (ItemType::AgentMessage, or(text, "Agent message"), None)
        }
        ItemKind::Reasoning { text, .. } => {
            (ItemType::Reasoning, cut(or(text, "Reasoning update")), None)
        }
        ItemKind::CommandExecution {
            command,
            cwd,
            process_id,
            output,
            ..
        } => (
            ItemType::CommandExecution,
            or(command, "Command execution"),
            Some(CommandExecutionItem {
                command: command.clone(),
                cwd: cwd.clone(),
                process_id: process_id.map_or_else(|| NO_PROCESS.to_owned(), |p| p.to_string()),
                output: (!output.is_empty()).then(|| output.clone()),
            }),
        ),
        ItemKind::TodoList { todos } => match version {
            ProtocolVersion::V0_2 => return None,
            ProtocolVersion::V0_7 => {
                let lines: Vec<String> = todos
                    .iter()
                    .map(|t| {
                        let status = format!("{:?}", t.status).to_lowercase();
                        format!("[{status}] {}", t.content)
                    })
                    .collect();
                (ItemType::Plan, or(&lines.join("\n"), "Plan update"), None)
            }
        },
        ItemKind::FileChange { path, .. } => (
            ItemType::FileChange,
            format!(
                "File change ({}): 1 file ({path})",
                status_word(item.status)
            ),
            None,
        ),
        ItemKind::ToolCall { name, error, .. } if name.starts_with("mcp__") => (
            ItemType::McpToolCall,
            mcp_summary(name, item.status, error.as_deref()),
            None,
        ),
        ItemKind::ContextCompaction { .. } => (
            ItemType::ContextCompaction,
            "Context compaction".to_owned(),
            None,
        ),
        other => (
            ItemType::Unknown,
            cut(gantry_only(other, item.status)),
            None,
        ),
    };
    Some(ClientMessage {
        request_id,
        payload: Payload::Item(ItemUpdate {
            sdk_item_id: item.id.to_string(),
            status,
            item_type,
            text: Some(text),
            command_execution_item: command,
            thread_id: Some(thread.to_string()),
            sdk_turn_id: Some(item.turn_id.to_string()),
        }),
    })
}

/// `text` trimmed, or `empty` when nothing is left (a message whose first
/// words have not streamed yet).
fn or(text: &str, empty: &str) -> String {
    let text = text.trim();
    if text.is_empty() { empty } else { text }.to_owned()
}

/// At most [`MAX_TEXT`] characters, the cut marked.
fn cut(text: String) -> String {
    if text.chars().count() <= MAX_TEXT {
        return text;
    }
    let kept: String = text.chars().take(MAX_TEXT - 3).collect();
    format!("{kept}...")
}

/// An item's status as codex words it in its summaries.
fn status_word(status: ItemStatus) -> &'static str {
    match status {
        ItemStatus::InProgress => "inProgress",
        ItemStatus::Completed => "completed",
        ItemStatus::Failed => "failed",
        ItemStatus::Interrupted => "interrupted",
    }
}

/// `MCP server/tool (status)`, then what it came to, as CompanyHelm's
/// runner words an MCP tool call.
fn mcp_summary(name: &str, status: ItemStatus, error: Option<&str>) -> String {
    let rest = name.trim_start_matches("mcp__");
    let (server, tool) = rest.split_once("__").unwrap_or((rest, ""));
    let base = format!("MCP {server}/{tool} ({})", status_word(status));
    match (error, status) {
        (Some(error), _) => format!("{base}: {error}"),
        (None, ItemStatus::Completed) => format!("{base}: completed"),
        _ => base,
    }
}

/// One line on an item codex has no type for.
fn gantry_only(kind: &ItemKind, status: ItemStatus) -> String {
    let status = status_word(status);
    match kind {
        ItemKind::Error { message } => format!("Error: {message}"),
        ItemKind::ToolCall { name, error, .. } => match error {
            Some(error) => format!("Tool {name} ({status}): {error}"),
            None => format!("Tool {name} ({status})"),
        },
        ItemKind::Approval {
            request, decision, ..
        } => {
            let what = request.command.as_deref().unwrap_or(&request.tool);
            let answer = match decision {
                None => "waiting for an answer".to_owned(),
                Some(ApprovalDecision::Approve | ApprovalDecision::ApproveForSession) => {
                    "approved".to_owned()
                }
                Some(ApprovalDecision::Deny { reason: Some(why) }) => format!("denied: {why}"),
                Some(ApprovalDecision::Deny { reason: None }) => "denied".to_owned(),
                Some(ApprovalDecision::Abort) => "denied, turn aborted".to_owned(),
            };
            format!(
                "Approval of {} `{what}` ({answer}): {}",
                request.tool, request.reason
            )
        }
        ItemKind::ExternalTask { tool, mode, .. } => {
            let mode = format!("{mode:?}").to_lowercase();
            format!("External task {tool} ({status}, {mode})")
        }
        ItemKind::StructuredOutput {
            schema_name,
            payload,
        } => match schema_name {
            Some(schema) => format!("Structured output ({schema}): {payload}"),
            None => format!("Structured output: {payload}"),
        },
        other => other.name().to_owned(),
    }
}

#[cfg(test)]
mod tests;

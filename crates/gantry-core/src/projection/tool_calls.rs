//! How a tool call ended, as a type: whether it ran, failed, or was refused
//! (and why), read from the item's status and kind, never from its text.

use gantry_types::{Item, ItemKind, ItemStatus, Refusal};

/// How a tool call (a command, a file change, a tool, an external task)
/// ended, or that it has not yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOutcome {
    /// Still running.
    Running,
    /// It ran and reported success.
    Succeeded,
    /// It ran and failed: a non-zero exit, a tool error, a failed edit.
    Failed,
    /// The engine did not run it: the policy or a human denied it, or the
    /// log could not be saved first.
    Refused(Refusal),
    /// The turn was interrupted while it ran.
    Interrupted,
}

impl ToolOutcome {
    /// Whether the model was told the call did not succeed.
    pub fn is_failure(&self) -> bool {
        !matches!(self, Self::Running | Self::Succeeded)
    }
}

/// How the tool call of `item` ended.
pub fn tool_outcome(item: &Item) -> ToolOutcome {
    if let Some(refusal) = item.tool_call.as_ref().and_then(|c| c.refused.clone()) {
        return ToolOutcome::Refused(refusal);
    }
    match item.status {
        ItemStatus::InProgress => return ToolOutcome::Running,
        ItemStatus::Interrupted => return ToolOutcome::Interrupted,
        ItemStatus::Failed => return ToolOutcome::Failed,
        ItemStatus::Completed => {}
    }
    let failed = match &item.kind {
        ItemKind::CommandExecution { exit_code, .. } => exit_code.is_none_or(|c| c != 0),
        ItemKind::ToolCall { error, .. } | ItemKind::ExternalTask { error, .. } => error.is_some(),
        _ => false,
    };
    if failed {
        ToolOutcome::Failed
    } else {
        ToolOutcome::Succeeded
    }
}

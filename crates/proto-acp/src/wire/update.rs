//! `session/update` notifications: chunks, tool calls, the plan, usage.

use serde::Serialize;
use serde_json::Value;

use super::ContentBlock;

/// `session/update`'s params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    /// The session.
    pub session_id: String,
    /// What changed.
    pub update: SessionUpdate,
}

/// What changed in a session (`SessionUpdate`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    /// Part of a user message (history replay).
    UserMessageChunk {
        /// Always a block, never a bare string.
        content: ContentBlock,
    },
    /// Part of the agent's answer.
    AgentMessageChunk {
        /// Always a block, never a bare string.
        content: ContentBlock,
    },
    /// Part of the agent's reasoning.
    AgentThoughtChunk {
        /// Always a block, never a bare string.
        content: ContentBlock,
    },
    /// A tool call started (or is asked about).
    ToolCall(ToolCall),
    /// A tool call changed.
    ToolCallUpdate(ToolCallUpdate),
    /// The agent's plan (its task list), whole.
    Plan {
        /// Every entry.
        entries: Vec<PlanEntry>,
    },
    /// The session's mode changed.
    CurrentModeUpdate {
        /// The mode now.
        #[serde(rename = "currentModeId")]
        current_mode_id: String,
    },
    /// How full the context is, and what the session cost.
    UsageUpdate {
        /// Tokens in the context.
        used: u64,
        /// The context window.
        size: u64,
        /// What the session cost so far.
        #[serde(skip_serializing_if = "Option::is_none")]
        cost: Option<Cost>,
    },
}

/// A cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cost {
    /// The amount.
    pub amount: f64,
    /// ISO 4217 code.
    pub currency: String,
}

/// What kind of work a tool call does (`ToolKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads files or data.
    Read,
    /// Changes files.
    Edit,
    /// Removes files.
    Delete,
    /// Moves files.
    Move,
    /// Searches.
    Search,
    /// Runs a command.
    Execute,
    /// Plans or thinks.
    Think,
    /// Fetches from the network.
    Fetch,
    /// Anything else.
    Other,
}

/// Where a tool call stands (`ToolCallStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Not started (waiting for permission).
    Pending,
    /// Running.
    InProgress,
    /// Done.
    Completed,
    /// Failed, was refused or interrupted.
    Failed,
}

/// A file a tool call works on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCallLocation {
    /// Absolute path.
    pub path: String,
    /// Line, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// What a tool call produced (`ToolCallContent`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallContent {
    /// A content block.
    Content {
        /// The block.
        content: ContentBlock,
    },
    /// A file change.
    Diff {
        /// Absolute path.
        path: String,
        /// The text before (`null` for a new file).
        #[serde(rename = "oldText")]
        old_text: Option<String>,
        /// The text after.
        #[serde(rename = "newText")]
        new_text: String,
    },
    /// A terminal the client runs.
    Terminal {
        /// Its id.
        #[serde(rename = "terminalId")]
        terminal_id: String,
    },
}

/// A new tool call (`ToolCall`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Its id in the session.
    pub tool_call_id: String,
    /// What it does, for people.
    pub title: String,
    /// Its kind.
    pub kind: ToolKind,
    /// Where it stands.
    pub status: ToolCallStatus,
    /// What it produced so far.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ToolCallContent>,
    /// Files it works on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<ToolCallLocation>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    /// Its result as the model got it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
}

/// A change to a tool call: fields left out are unchanged
/// (`ToolCallUpdate`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    /// Which call.
    pub tool_call_id: String,
    /// A new title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A new kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    /// A new status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    /// The whole content, replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolCallContent>>,
    /// The whole location list, replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<ToolCallLocation>>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    /// Its result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
}

/// A plan entry (`PlanEntry`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanEntry {
    /// What to do.
    pub content: String,
    /// `high`, `medium` or `low`.
    pub priority: &'static str,
    /// `pending`, `in_progress` or `completed`.
    pub status: &'static str,
}

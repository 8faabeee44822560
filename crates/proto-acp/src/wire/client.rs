//! What the agent asks the client: permission, files, terminals.

use serde::{Deserialize, Serialize};

use super::ToolCallUpdate;

/// `session/request_permission`'s params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    /// The session.
    pub session_id: String,
    /// The call asked about.
    pub tool_call: ToolCallUpdate,
    /// The answers offered.
    pub options: Vec<PermissionOption>,
}

/// An answer offered (`PermissionOption`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// Its id.
    pub option_id: String,
    /// Its label.
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: &'static str,
}

/// `session/request_permission`'s result.
#[derive(Debug, Clone, Deserialize)]
pub struct RequestPermissionResponse {
    /// What the user chose.
    pub outcome: PermissionOutcome,
}

/// What the user chose (`RequestPermissionOutcome`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionOutcome {
    /// The prompt was cancelled.
    Cancelled,
    /// An option.
    Selected {
        /// Its id.
        #[serde(rename = "optionId")]
        option_id: String,
    },
}

/// `fs/read_text_file`'s params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFileRequest {
    /// The session.
    pub session_id: String,
    /// Absolute path.
    pub path: String,
}

/// `fs/read_text_file`'s result.
#[derive(Debug, Clone, Deserialize)]
pub struct ReadTextFileResponse {
    /// The text (the editor's buffer when it has the file open).
    pub content: String,
}

/// `fs/write_text_file`'s params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteTextFileRequest {
    /// The session.
    pub session_id: String,
    /// Absolute path.
    pub path: String,
    /// The whole new text.
    pub content: String,
}

/// `terminal/create`'s params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTerminalRequest {
    /// The session.
    pub session_id: String,
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment.
    pub env: Vec<EnvVariable>,
    /// Where it runs (absolute).
    pub cwd: String,
    /// Output kept by the client.
    pub output_byte_limit: u64,
}

/// An environment variable given to the client.
#[derive(Debug, Clone, Serialize)]
pub struct EnvVariable {
    /// The name.
    pub name: String,
    /// The value.
    pub value: String,
}

/// `terminal/create`'s result.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTerminalResponse {
    /// The terminal.
    pub terminal_id: String,
}

/// The params of `terminal/output`, `wait_for_exit`, `kill`, `release`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalRequest {
    /// The session.
    pub session_id: String,
    /// The terminal.
    pub terminal_id: String,
}

/// `terminal/output`'s result.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalOutputResponse {
    /// What it printed (the client's capped copy).
    pub output: String,
    /// Whether the start was cut.
    #[serde(default)]
    pub truncated: bool,
    /// How it ended, once it has.
    #[serde(default)]
    pub exit_status: Option<TerminalExitStatus>,
}

/// How a terminal's command ended (also `terminal/wait_for_exit`'s result).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalExitStatus {
    /// Its exit code.
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// The signal that killed it.
    #[serde(default)]
    pub signal: Option<String>,
}

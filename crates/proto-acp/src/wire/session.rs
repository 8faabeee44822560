//! The session methods: new, load, list, modes, config options, prompt,
//! cancel.

use serde::{Deserialize, Serialize};

use super::ContentBlock;

/// A `{name, value}` pair: an environment variable or an HTTP header.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NameValue {
    /// The name.
    pub name: String,
    /// The value.
    pub value: String,
}

/// An MCP server the client wants the session to use (`McpServer`):
/// stdio entries carry no `type`, remote ones do.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum McpServer {
    /// Streamable HTTP or SSE.
    Remote(RemoteMcpServer),
    /// A child process.
    Stdio(StdioMcpServer),
}

/// A stdio MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct StdioMcpServer {
    /// Its name.
    pub name: String,
    /// The program.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its environment.
    #[serde(default)]
    pub env: Vec<NameValue>,
}

/// A remote MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RemoteMcpServer {
    /// `http` or `sse`.
    #[serde(rename = "type")]
    pub kind: RemoteKind,
    /// Its name.
    pub name: String,
    /// Its URL.
    pub url: String,
    /// Headers for every request.
    #[serde(default)]
    pub headers: Vec<NameValue>,
}

/// A remote MCP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteKind {
    /// Streamable HTTP.
    Http,
    /// Server-sent events (served as streamable HTTP by Gantry's client).
    Sse,
}

/// `session/new`'s params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionRequest {
    /// The workspace (absolute).
    pub cwd: String,
    /// MCP servers for this session.
    #[serde(default)]
    pub mcp_servers: Vec<McpServer>,
}

/// `session/new`'s result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    /// The new session (a Gantry thread id).
    pub session_id: String,
    /// Its modes.
    pub modes: SessionModeState,
    /// Its config options.
    pub config_options: Vec<SessionConfigOption>,
}

/// `session/load`'s params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionRequest {
    /// The session.
    pub session_id: String,
    /// The workspace the client has open.
    pub cwd: String,
    /// MCP servers for this session.
    #[serde(default)]
    pub mcp_servers: Vec<McpServer>,
}

/// `session/load`'s result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionResponse {
    /// Its modes.
    pub modes: SessionModeState,
    /// Its config options.
    pub config_options: Vec<SessionConfigOption>,
}

/// `session/list`'s params.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsRequest {
    /// Only sessions in this workspace.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Where the previous page ended.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// `session/list`'s result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsResponse {
    /// Sessions, most recently updated first.
    pub sessions: Vec<SessionInfo>,
    /// The next page's cursor, if there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One session in a listing.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// Its id.
    pub session_id: String,
    /// Its workspace.
    pub cwd: String,
    /// Its title: the thread's name, else the start of its first message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Last change, ISO 8601.
    pub updated_at: String,
}

/// The modes and the current one (`SessionModeState`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionModeState {
    /// The current mode.
    pub current_mode_id: String,
    /// Every mode.
    pub available_modes: Vec<SessionMode>,
}

/// A mode.
#[derive(Debug, Clone, Serialize)]
pub struct SessionMode {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
}

/// `session/set_mode`'s params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionModeRequest {
    /// The session.
    pub session_id: String,
    /// The mode.
    pub mode_id: String,
}

/// `session/set_config_option`'s params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionConfigOptionRequest {
    /// The session.
    pub session_id: String,
    /// The option.
    pub config_id: String,
    /// Its new value (a value id for a select).
    pub value: serde_json::Value,
}

/// `session/set_config_option`'s result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionConfigOptionResponse {
    /// Every option, as it is now.
    pub config_options: Vec<SessionConfigOption>,
}

/// A select config option (`SessionConfigOption` of type `select`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionConfigOption {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// `model` or `thought_level`.
    pub category: String,
    /// Always `select`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The value chosen.
    pub current_value: String,
    /// The values to choose from.
    pub options: Vec<SessionConfigSelectOption>,
}

/// A value of a select option.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionConfigSelectOption {
    /// The value id.
    pub value: String,
    /// Its name.
    pub name: String,
}

/// `session/prompt`'s params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest {
    /// The session.
    pub session_id: String,
    /// What the user sent.
    pub prompt: Vec<ContentBlock>,
    /// ACP's extension field, any JSON: only `traceparent` is read
    /// ([`PromptRequest::traceparent`]), and a `_meta` of another shape
    /// is no error.
    #[serde(default, rename = "_meta")]
    pub meta: Option<serde_json::Value>,
}

impl PromptRequest {
    /// `_meta.traceparent`, the W3C trace context the client's span
    /// propagates (the key OpenTelemetry's ACP and MCP instrumentation
    /// writes), when well-formed; anything else is ignored.
    pub fn traceparent(&self) -> Option<String> {
        let value = self.meta.as_ref()?.get("traceparent")?.as_str()?;
        gantry_types::trace_context::parse(value)
    }
}

/// Why a turn stopped (`StopReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished.
    EndTurn,
    /// The token budget ran out.
    MaxTokens,
    /// The round limit was hit.
    MaxTurnRequests,
    /// The model refused.
    Refusal,
    /// The client cancelled.
    Cancelled,
}

/// `session/prompt`'s result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    /// Why the turn stopped.
    pub stop_reason: StopReason,
    /// The turn's tokens (ACP's unstable `Usage`; harnesses such as Harbor
    /// read it for their token counts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<PromptUsage>,
}

/// A turn's tokens (`Usage`, unstable in ACP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptUsage {
    /// Input plus output.
    pub total_tokens: u64,
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Completion tokens, reasoning ones included.
    pub output_tokens: u64,
    /// Completion tokens spent on reasoning.
    pub thought_tokens: u64,
    /// Prompt tokens served from cache.
    pub cached_read_tokens: u64,
    /// Prompt tokens written to cache.
    pub cached_write_tokens: u64,
}

impl From<&gantry_types::Usage> for PromptUsage {
    fn from(u: &gantry_types::Usage) -> Self {
        PromptUsage {
            total_tokens: u.total(),
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            thought_tokens: u.reasoning_tokens,
            cached_read_tokens: u.cached_input_tokens,
            cached_write_tokens: u.cache_write_tokens,
        }
    }
}

/// `session/cancel`'s params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelNotification {
    /// The session.
    pub session_id: String,
}

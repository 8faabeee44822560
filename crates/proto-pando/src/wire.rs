//! Pando's `protocol` package (seed 003) as Gantry's own serde types: the
//! method and topic names, the params, results and PUB payloads, names and
//! omissions as in Pando's Go structs (`omitempty` is
//! `skip_serializing_if`). Times are RFC 3339 strings in UTC, as Go's
//! `time.Time` marshals them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The nine methods of the ROUTER socket.
pub mod method {
    /// A full state snapshot.
    pub const STATE_SYNC: &str = "state.sync";
    /// Every session, as a bare array.
    pub const SESSION_LIST: &str = "session.list";
    /// One session.
    pub const SESSION_GET: &str = "session.get";
    /// Changes the instance's active session.
    pub const SESSION_ACTIVATE: &str = "session.activate";
    /// A user message to a session (starts or queues a turn).
    pub const MESSAGE_SEND: &str = "message.send";
    /// Cancels a session's running turn.
    pub const SESSION_INTERRUPT: &str = "session.interrupt";
    /// Liveness.
    pub const INSTANCE_PING: &str = "instance.ping";
    /// The instance's registry entry and more.
    pub const INSTANCE_INFO: &str = "instance.info";
    /// A session's messages, as a bare array.
    pub const MESSAGE_LIST: &str = "message.list";
}

/// The topics of the PUB socket.
pub mod topic {
    /// The full session list, when it changes.
    pub const SESSION_LIST: &str = "session.list";
    /// One session created or updated.
    pub const SESSION_UPDATE: &str = "session.update";
    /// The active session changed.
    pub const SESSION_ACTIVATED: &str = "session.activated";
    /// A session left (archived, or moved to another workspace).
    pub const SESSION_DELETED: &str = "session.deleted";
    /// A message was added to a session.
    pub const MESSAGE_APPEND: &str = "message.append";
    /// A turn's model work began.
    pub const LLM_START: &str = "llm.start";
    /// One streamed token of the agent's text.
    pub const LLM_TOKEN: &str = "llm.token";
    /// A turn's model work ended, with its token counts.
    pub const LLM_END: &str = "llm.end";
    /// A tool call began.
    pub const TOOL_START: &str = "tool.start";
    /// A tool call ended.
    pub const TOOL_END: &str = "tool.end";
    /// Liveness, every few seconds.
    pub const INSTANCE_HEARTBEAT: &str = "instance.heartbeat";
    /// The instance is going away.
    pub const INSTANCE_SHUTDOWN: &str = "instance.shutdown";
}

/// `SessionPayload`: a session in lists and session topics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionPayload {
    /// The thread id.
    pub id: String,
    /// Its name, else its preview.
    pub title: String,
    /// When it last changed.
    pub updated_at: String,
    /// User and assistant messages.
    pub message_count: i64,
}

/// `SessionListPayload`: the full list, on `session.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionListPayload {
    /// Every session.
    pub sessions: Vec<SessionPayload>,
}

/// `MessagePayload`: one message of `message.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagePayload {
    /// The message's id (its first item).
    pub id: String,
    /// `user` or `assistant`.
    pub role: String,
    /// Its text (or a summary of its tool calls).
    pub content: String,
    /// When it started.
    pub created_at: String,
}

/// `MessageAppendPayload`, on `message.append`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageAppendPayload {
    /// The session.
    pub session_id: String,
    /// The message's id, as `message.list` gives it.
    pub message_id: String,
    /// `user` or `assistant`.
    pub role: String,
    /// Its text.
    pub content: String,
}

/// The params every session method takes (`SessionGetParams`,
/// `SessionActivateParams`, `SessionInterruptParams`, `MessageListParams`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SessionParams {
    /// The session.
    #[serde(default)]
    pub session_id: String,
}

/// `MessageSendParams`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MessageSendParams {
    /// The session (created when it does not exist yet).
    #[serde(default)]
    pub session_id: String,
    /// The user's message.
    #[serde(default)]
    pub content: String,
}

/// `StateSyncParams`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StateSyncParams {
    /// Ignored: an instance serves one project.
    #[serde(default)]
    pub project_id: String,
}

/// `OKResult`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OkResult {
    /// Always true in an answer.
    pub ok: bool,
}

/// `PingResult`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingResult {
    /// `ok`.
    pub status: String,
    /// The instance's UUID.
    pub instance_id: String,
    /// A Go duration string (`1h30m0s`).
    pub uptime: String,
}

/// `StateSyncResult`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateSyncResult {
    /// Every session.
    pub sessions: Vec<SessionPayload>,
    /// The active session, if one was activated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_session_id: Option<String>,
    /// The instance's UUID.
    pub instance_id: String,
}

/// `HeartbeatPayload`, on `instance.heartbeat`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeartbeatPayload {
    /// The instance's UUID.
    pub instance_id: String,
    /// The active session, if one was activated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_session_id: Option<String>,
    /// Sessions of the workspace.
    pub session_count: i64,
    /// A Go duration string.
    pub uptime: String,
    /// When the instance started.
    pub started_at: String,
}

/// `ShutdownPayload`, on `instance.shutdown`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShutdownPayload {
    /// The instance's UUID.
    pub instance_id: String,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `LLMStartPayload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmStartPayload {
    /// The session.
    pub session_id: String,
}

/// `LLMTokenPayload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmTokenPayload {
    /// The session.
    pub session_id: String,
    /// The text streamed.
    pub token: String,
}

/// `LLMEndPayload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmEndPayload {
    /// The session.
    pub session_id: String,
    /// Prompt tokens the turn's model requests used.
    pub tokens_in: i64,
    /// Completion tokens they produced.
    pub tokens_out: i64,
}

/// `ToolStartPayload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolStartPayload {
    /// The session.
    pub session_id: String,
    /// The tool's name as the model called it.
    pub tool_name: String,
    /// The provider's id of the call.
    pub call_id: String,
    /// The arguments, a JSON string.
    pub params: String,
}

/// `ToolEndPayload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolEndPayload {
    /// The session.
    pub session_id: String,
    /// The tool's name as the model called it.
    pub tool_name: String,
    /// The provider's id of the call.
    pub call_id: String,
    /// Whether it failed or was refused.
    pub is_error: bool,
    /// What the model was told, cut to 512 bytes (then `...`).
    pub result: String,
}

/// The JSON after a PUB message's topic and NUL byte.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The instance's UUID.
    #[serde(rename = "instanceId")]
    pub instance_id: String,
    /// Always present, possibly empty.
    #[serde(rename = "projectId")]
    pub project_id: String,
    /// The session a topic is about.
    #[serde(rename = "sessionId", default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The topic again.
    pub topic: String,
    /// When it was published (UTC).
    pub timestamp: String,
    /// The topic's payload.
    pub payload: Value,
}

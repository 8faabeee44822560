//! Pando's `protocol` package (seed 003) as Gantry's own serde types: the
//! method and topic names, the params, results and PUB payloads, names and
//! omissions as in Pando's Go structs (`omitempty` is
//! `skip_serializing_if`). Times are RFC 3339 strings in UTC, as Go's
//! `time.Time` marshals them. The methods Pando's newer sources add
//! (delegation protocol 2, the primary's maintenance RPCs) are at the end.

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

/// The methods Pando's newer sources add (`internal/ipc/protocol/rpc.go`).
pub mod newer {
    /// Runs a delegated prompt in a session of its own; answers with its output.
    pub const DELEGATION_RUN: &str = "delegation.run";
    /// Interrupts a running delegation, by its correlation id.
    pub const DELEGATION_CANCEL: &str = "delegation.cancel";
    /// A delegation's state (and result, once completed), by correlation id.
    pub const DELEGATION_STATUS: &str = "delegation.status";
    /// Replaces the instance's scheduled jobs.
    pub const CRONJOB_RELOAD: &str = "cronjob.reload";
    /// Compacts the instance's database.
    pub const DB_COMPACT: &str = "db.compact";
    /// Rebuilds Pando's knowledge-base link graph (no Gantry counterpart).
    pub const KB_RELINK: &str = "kb.relink";
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

/// `PingResult`; the delegation fields are the newer sources'.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingResult {
    /// `ok`.
    pub status: String,
    /// The instance's UUID.
    pub instance_id: String,
    /// A Go duration string (`1h30m0s`).
    pub uptime: String,
    /// The instance handles `delegation.run` (omitted when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub accepts_delegations: bool,
    /// The delegation protocol it speaks (omitted when 0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delegation_protocol: i64,
}

/// `DelegationProtocolVersion`: 1 is `delegation.run` and
/// `delegation.cancel`, 2 adds `delegation.status`.
pub const DELEGATION_PROTOCOL: i64 = 2;

fn is_zero(n: &i64) -> bool {
    *n == 0
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

/// `DelegationRunParams`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DelegationRunParams {
    /// The prompt of the delegated turn.
    #[serde(default)]
    pub prompt: String,
    /// Where it runs: the instance's directory or one inside it.
    #[serde(default)]
    pub cwd: String,
    /// A Gantry agent (by id or name) it runs under.
    #[serde(default)]
    pub persona: String,
    /// The model it uses instead of the default.
    #[serde(default)]
    pub model: String,
    /// The caller's key for `delegation.cancel` and `delegation.status`.
    #[serde(default)]
    pub correlation_id: String,
}

/// `DelegationRunResult`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegationRunResult {
    /// The session (thread) the delegation ran in.
    pub session_id: String,
    /// The turn's final assistant message.
    pub output: String,
    /// `end_turn` (omitted when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stop_reason: String,
}

/// `DelegationCancelParams` and `DelegationStatusParams`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CorrelationParams {
    /// The correlation id the caller gave `delegation.run`.
    #[serde(default)]
    pub correlation_id: String,
}

/// `DelegationStatusResult`: `state` is `running`, `completed` (with the
/// result `delegation.run` answered) or `unknown`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegationStatusResult {
    /// `running`, `completed` or `unknown`.
    pub state: String,
    /// When completed: the session.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session_id: String,
    /// When completed: the output.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
    /// When completed: the stop reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stop_reason: String,
}

/// `config.CronJobsConfig`, the value of `cronjob.reload`'s `cron_jobs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CronJobsConfig {
    /// Off: no job runs on its schedule.
    #[serde(default)]
    pub enabled: bool,
    /// The jobs.
    #[serde(default)]
    pub jobs: Vec<CronJobConfig>,
}

/// `config.CronJob`: a prompt run on a schedule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CronJobConfig {
    /// Unique name.
    #[serde(default)]
    pub name: String,
    /// Standard cron (5 fields, or `@daily`-style).
    #[serde(default)]
    pub schedule: String,
    /// What the agent is told on each run.
    #[serde(default)]
    pub prompt: String,
    /// Off: it does not run on its schedule.
    #[serde(default)]
    pub enabled: bool,
    /// Pando's Mesnada engine (no Gantry counterpart: ignored).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub engine: String,
    /// The model its runs use.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// Where its runs happen: the instance's directory or one inside it.
    #[serde(default, rename = "workDir", skip_serializing_if = "String::is_empty")]
    pub work_dir: String,
    /// Labels (ignored).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// A Go duration (`30m`): one run's time limit.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub timeout: String,
}

/// `CronJobReloadResult`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronJobReloadResult {
    /// How many jobs the configuration holds.
    pub jobs: i64,
    /// Whether a scheduler took them (always, in `gantry serve`).
    pub scheduler: bool,
}

/// `DBCompactParams`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DbCompactParams {
    /// Only hand back free pages (`PRAGMA incremental_vacuum`).
    #[serde(default)]
    pub incremental: bool,
    /// Switch to incremental auto-vacuum before a full compaction.
    #[serde(default)]
    pub enable_auto_vacuum: bool,
}

/// `DBCompactResult`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbCompactResult {
    /// `full`, `incremental`, `postgres-vacuum` or `memory`.
    pub mode: String,
    /// Bytes before.
    pub size_before: i64,
    /// Bytes after.
    pub size_after: i64,
    /// `size_before - size_after`.
    pub freed: i64,
}

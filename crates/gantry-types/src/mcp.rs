//! The vocabulary of MCP servers shared by the client (gantry-tools), the
//! engine and the adapters: how a server is configured and reached, how
//! its startup goes, what it offers.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Startup timeout when a config does not give one.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 30_000;
/// Per-call timeout when a config does not give one.
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 120_000;

fn default_true() -> bool {
    true
}
fn default_startup_timeout_ms() -> u64 {
    DEFAULT_STARTUP_TIMEOUT_MS
}
fn default_call_timeout_ms() -> u64 {
    DEFAULT_CALL_TIMEOUT_MS
}

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerConfig {
    /// The server's name: the key in the manager and the `<server>` part of
    /// its tools' full names.
    pub name: String,
    /// Disabled servers are kept but never started.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// How to reach it.
    pub transport: McpTransport,
    /// Time allowed to start, handshake and list tools.
    #[serde(default = "default_startup_timeout_ms")]
    pub startup_timeout_ms: u64,
    /// Time allowed for one tool call unless the caller gives another.
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
}

impl McpServerConfig {
    /// An enabled server with the default timeouts.
    pub fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            enabled: true,
            transport,
            startup_timeout_ms: DEFAULT_STARTUP_TIMEOUT_MS,
            call_timeout_ms: DEFAULT_CALL_TIMEOUT_MS,
        }
    }
}

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpTransport {
    /// A child process speaking MCP on stdin/stdout. It inherits Gantry's
    /// environment plus `env`; it is killed when disconnected.
    Stdio {
        /// Program to run (looked up in `PATH`).
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Extra environment variables.
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Working directory (default: Gantry's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The MCP endpoint, e.g. `http://127.0.0.1:8000/mcp`.
        url: String,
        /// Headers sent with every request.
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// Name of the environment variable holding a bearer token, sent as
        /// `Authorization: Bearer <token>`. The token itself is never stored
        /// in the config.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bearer_token_env: Option<String>,
    },
}

/// Where one server's startup stands (seed 002 `McpStartupStatus`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpStartupStatus {
    /// Connecting.
    Starting,
    /// Connected, tools listed.
    Ready,
    /// Could not connect (including a startup timeout).
    Failed {
        /// Why.
        error: String,
    },
    /// Startup was cancelled before it finished.
    Cancelled,
}

/// A progress update for one server's startup (seed 002 `McpStartupUpdateEvent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpStartupUpdate {
    /// The server.
    pub server_name: String,
    /// Its new status.
    pub status: McpStartupStatus,
}

/// A server that failed to start (seed 002 `McpStartupFailure`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpStartupFailure {
    /// The server.
    pub server_name: String,
    /// Why.
    pub error: String,
}

/// Summary once every server's startup has finished (seed 002
/// `McpStartupCompleteEvent`). Names are sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpStartupComplete {
    /// Servers now connected.
    pub ready: Vec<String>,
    /// Servers that failed.
    pub failed: Vec<McpStartupFailure>,
    /// Servers whose startup was cancelled.
    pub cancelled: Vec<String>,
}

/// One server as the MCP manager's status shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerStatus {
    /// The server.
    pub name: String,
    /// Whether it is enabled in its config.
    pub enabled: bool,
    /// Whether a live connection exists.
    pub connected: bool,
    /// Tools it offers (0 when not connected).
    pub tool_count: usize,
    /// The last connect or connection error; cleared by a successful connect.
    pub last_error: Option<String>,
}

/// One tool of a connected server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolInfo {
    /// The name offered to the model: `mcp__<server>__<tool>` (sanitized by the MCP client).
    pub full_name: String,
    /// The server's name as configured.
    pub server: String,
    /// The tool's name as the server gives it (what is sent on a call).
    pub tool: String,
    /// The server's description of the tool (may be empty).
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: Value,
}

//! MCP (Model Context Protocol) client: connects to configured MCP servers
//! with `rmcp` (a child process on stdio, or streamable HTTP), lists their
//! tools and calls them, and offers each tool to the model like a built-in
//! through [`McpTool`].
//!
//! [`McpManager`] holds the server configs (persisting them is the caller's
//! job) and one connection per server. Startup ([`McpManager::start_all`])
//! connects every enabled server in parallel, each within its own startup
//! timeout, and reports progress per server. A server whose process dies or
//! whose connection breaks fails the call in progress with an error naming
//! it, is shown as failed in [`McpManager::status`], and is reconnected on
//! the next [`McpManager::call`] or [`McpManager::tools`].
//!
//! Tool names given to the model follow [`names::full_name`]:
//! `mcp__<server>__<tool>`, sanitized into `[a-zA-Z0-9_-]`.

mod connect;
pub mod names;
mod tool;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::future::join_all;
use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::Tool;
use connect::Connection;
pub use tool::McpTool;

// The vocabulary of MCP servers (configs, startup progress, status) is
// shared with the engine and adapters: it lives in gantry-types.
pub use gantry_types::mcp::{
    DEFAULT_CALL_TIMEOUT_MS, DEFAULT_STARTUP_TIMEOUT_MS, McpServerConfig, McpServerStatus,
    McpStartupComplete, McpStartupFailure, McpStartupStatus, McpStartupUpdate, McpToolInfo,
    McpTransport,
};

/// Why an MCP operation failed. Messages name the server and are meant for
/// the model and the user as they are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// No server of that name is configured.
    #[error("no MCP server named `{0}` is configured")]
    UnknownServer(String),
    /// The server is disabled in its config.
    #[error("MCP server `{0}` is disabled")]
    Disabled(String),
    /// The config is unusable.
    #[error("invalid MCP server config: {0}")]
    InvalidConfig(String),
    /// Connecting failed (or timed out).
    #[error("MCP server `{server}` is not available: {error}")]
    Unavailable {
        /// The server.
        server: String,
        /// Why.
        error: String,
    },
    /// The server's process died or its connection broke during the call.
    /// The server is marked failed and reconnected on next use.
    #[error(
        "MCP server `{server}` stopped during the call to `{tool}`: {error} \
         (it will be restarted on next use)"
    )]
    ServerGone {
        /// The server.
        server: String,
        /// The tool being called.
        tool: String,
        /// What broke.
        error: String,
    },
    /// The call did not finish within its timeout.
    #[error("MCP tool `{tool}` on server `{server}` timed out after {timeout_ms} ms")]
    Timeout {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The timeout.
        timeout_ms: u64,
    },
    /// The caller cancelled the call.
    #[error("MCP tool call `{tool}` on server `{server}` was cancelled")]
    Cancelled {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// The tool ran and reported an error (`isError`).
    #[error("MCP tool `{tool}` on server `{server}` failed: {message}")]
    ToolFailed {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The tool's own error text.
        message: String,
    },
    /// The server answered with a JSON-RPC error (unknown tool, bad
    /// arguments...) or an unexpected response.
    #[error("MCP server `{server}` rejected the call to `{tool}`: {message}")]
    Rejected {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The server's message.
        message: String,
    },
    /// The arguments are not a JSON object.
    #[error("invalid arguments for MCP tool `{tool}` on server `{server}`: {message}")]
    InvalidArguments {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// What is wrong.
        message: String,
    },
}

/// MCP servers and their connections. Cheap to clone (clones share state);
/// safe to use from many tasks at once.
#[derive(Clone, Default)]
pub struct McpManager {
    servers: Arc<Mutex<BTreeMap<String, Arc<Server>>>>,
}

/// One configured server. Replaced as a whole when its config changes, so
/// the config never changes under a connection made from it.
struct Server {
    config: McpServerConfig,
    state: Mutex<State>,
    /// Serializes connecting, so parallel calls to a down server start it
    /// once. Never held while the state lock is.
    connecting: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    conn: Option<Arc<Connection>>,
    last_error: Option<String>,
    /// A live connection broke: [`McpManager::tools`] reconnects it (a server
    /// that never started is only retried by `call`/`connect`/`start_all`).
    broken: bool,
}

/// Locks `m`, recovering from poisoning: the guarded data stays consistent
/// because no code path panics while holding these locks.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Server {
    fn new(config: McpServerConfig) -> Self {
        Self {
            config,
            state: Mutex::new(State::default()),
            connecting: tokio::sync::Mutex::new(()),
        }
    }

    fn name(&self) -> &str {
        &self.config.name
    }

    /// The live connection, if any. A connection found closed (its process
    /// exited, say) is dropped here and the server marked failed.
    fn live(&self) -> Option<Arc<Connection>> {
        let mut st = lock(&self.state);
        let conn = st.conn.clone()?;
        if conn.is_closed() {
            st.conn = None;
            st.broken = true;
            if st.last_error.is_none() {
                st.last_error = Some(conn.explain("the connection closed".into()));
            }
            return None;
        }
        Some(conn)
    }

    /// Records that `conn` broke with `error`, unless a newer connection
    /// already replaced it.
    fn mark_broken(&self, conn: &Arc<Connection>, error: &str) {
        conn.close();
        let mut st = lock(&self.state);
        if st.conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            st.conn = None;
        }
        st.broken = true;
        st.last_error = Some(error.to_string());
    }

    /// Connects unless already connected, within the startup timeout.
    async fn ensure(&self) -> Result<Arc<Connection>, McpError> {
        if let Some(c) = self.live() {
            return Ok(c);
        }
        if !self.config.enabled {
            return Err(McpError::Disabled(self.name().to_string()));
        }
        let _guard = self.connecting.lock().await;
        // Someone else may have connected while we waited.
        if let Some(c) = self.live() {
            return Ok(c);
        }
        let timeout = Duration::from_millis(self.config.startup_timeout_ms);
        // On timeout the connect future is dropped, which kills a stdio
        // server's process (rmcp's child guard).
        let result = match tokio::time::timeout(timeout, connect::connect(&self.config)).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "startup timed out after {} ms",
                self.config.startup_timeout_ms
            )),
        };
        let mut st = lock(&self.state);
        match result {
            Ok(conn) => {
                let conn = Arc::new(conn);
                st.conn = Some(conn.clone());
                st.last_error = None;
                st.broken = false;
                Ok(conn)
            }
            Err(error) => {
                st.conn = None;
                st.last_error = Some(error.clone());
                Err(McpError::Unavailable {
                    server: self.name().to_string(),
                    error,
                })
            }
        }
    }

    fn disconnect(&self) {
        let mut st = lock(&self.state);
        if let Some(conn) = st.conn.take() {
            conn.close();
        }
        st.broken = false;
    }
}

impl McpManager {
    /// A manager with no servers.
    pub fn new() -> Self {
        Self::default()
    }

    /// A manager holding `configs` (not connected yet).
    pub fn with_configs(
        configs: impl IntoIterator<Item = McpServerConfig>,
    ) -> Result<Self, McpError> {
        let m = Self::new();
        for c in configs {
            m.add(c)?;
        }
        Ok(m)
    }

    fn server(&self, name: &str) -> Result<Arc<Server>, McpError> {
        lock(&self.servers)
            .get(name)
            .cloned()
            .ok_or_else(|| McpError::UnknownServer(name.to_string()))
    }

    fn all(&self) -> Vec<Arc<Server>> {
        lock(&self.servers).values().cloned().collect()
    }

    /// Adds a server, or replaces the one of the same name (disconnecting
    /// it). Does not connect.
    pub fn add(&self, config: McpServerConfig) -> Result<(), McpError> {
        if config.name.trim().is_empty() {
            return Err(McpError::InvalidConfig("the server name is empty".into()));
        }
        match &config.transport {
            McpTransport::Stdio { command, .. } if command.trim().is_empty() => {
                return Err(McpError::InvalidConfig(format!(
                    "server `{}`: the command is empty",
                    config.name
                )));
            }
            McpTransport::Http { url, .. } if url.trim().is_empty() => {
                return Err(McpError::InvalidConfig(format!(
                    "server `{}`: the url is empty",
                    config.name
                )));
            }
            _ => {}
        }
        let name = config.name.clone();
        let old = lock(&self.servers).insert(name, Arc::new(Server::new(config)));
        if let Some(old) = old {
            old.disconnect();
        }
        Ok(())
    }

    /// Removes a server (disconnecting it). Returns whether it existed.
    pub fn remove(&self, name: &str) -> bool {
        let old = lock(&self.servers).remove(name);
        match old {
            Some(old) => {
                old.disconnect();
                true
            }
            None => false,
        }
    }

    /// The configs, sorted by name.
    pub fn list(&self) -> Vec<McpServerConfig> {
        self.all().iter().map(|s| s.config.clone()).collect()
    }

    /// Connects every enabled server in parallel; see
    /// [`Self::start_all_cancellable`].
    pub async fn start_all(&self, progress: impl Fn(McpStartupUpdate)) -> McpStartupComplete {
        self.start_all_cancellable(progress, &CancellationToken::new())
            .await
    }

    /// Connects every enabled server in parallel, each within its startup
    /// timeout. `progress` gets `starting` for each, then `ready`,
    /// `failed{error}` (a timeout is a failure) or `cancelled` (when `cancel`
    /// fires first) as each finishes. Already connected servers report
    /// `starting` and `ready` at once. Returns the summary when all are done.
    pub async fn start_all_cancellable(
        &self,
        progress: impl Fn(McpStartupUpdate),
        cancel: &CancellationToken,
    ) -> McpStartupComplete {
        let servers: Vec<_> = self
            .all()
            .into_iter()
            .filter(|s| s.config.enabled)
            .collect();
        let report = |server: &str, status| {
            progress(McpStartupUpdate {
                server_name: server.to_string(),
                status,
            })
        };
        for s in &servers {
            report(s.name(), McpStartupStatus::Starting);
        }
        let outcomes = join_all(servers.iter().map(|s| async {
            let status = tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    lock(&s.state).last_error = Some("startup cancelled".into());
                    McpStartupStatus::Cancelled
                }
                r = s.ensure() => match r {
                    Ok(_) => McpStartupStatus::Ready,
                    Err(McpError::Unavailable { error, .. }) => McpStartupStatus::Failed { error },
                    Err(e) => McpStartupStatus::Failed { error: e.to_string() },
                },
            };
            report(s.name(), status.clone());
            (s.name().to_string(), status)
        }))
        .await;
        let mut summary = McpStartupComplete::default();
        for (name, status) in outcomes {
            match status {
                McpStartupStatus::Ready => summary.ready.push(name),
                McpStartupStatus::Failed { error } => summary.failed.push(McpStartupFailure {
                    server_name: name,
                    error,
                }),
                McpStartupStatus::Cancelled | McpStartupStatus::Starting => {
                    summary.cancelled.push(name)
                }
            }
        }
        summary
    }

    /// Connects one server (no-op when connected).
    pub async fn connect(&self, name: &str) -> Result<(), McpError> {
        self.server(name)?.ensure().await.map(|_| ())
    }

    /// Disconnects one server (a stdio server's process is killed).
    pub fn disconnect(&self, name: &str) -> Result<(), McpError> {
        self.server(name)?.disconnect();
        Ok(())
    }

    /// Every server's state, sorted by name.
    pub fn status(&self) -> Vec<McpServerStatus> {
        self.all()
            .iter()
            .map(|s| {
                let conn = s.live();
                let st = lock(&s.state);
                McpServerStatus {
                    name: s.name().to_string(),
                    enabled: s.config.enabled,
                    connected: conn.is_some(),
                    tool_count: conn.map_or(0, |c| c.tools.len()),
                    last_error: st.last_error.clone(),
                }
            })
            .collect()
    }

    /// The tools of every connected server, by server then tool. A server
    /// whose connection broke is reconnected first (in parallel); one that
    /// cannot be is left out (see [`Self::status`] for why).
    pub async fn tools(&self) -> Vec<McpToolInfo> {
        let servers: Vec<_> = self
            .all()
            .into_iter()
            .filter(|s| s.config.enabled)
            .collect();
        let conns = join_all(servers.iter().map(|s| async {
            match s.live() {
                Some(c) => Some(c),
                None if lock(&s.state).broken => s.ensure().await.ok(),
                None => None,
            }
        }))
        .await;
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for (s, conn) in servers.iter().zip(conns) {
            let Some(conn) = conn else { continue };
            for t in &conn.tools {
                let mut full_name = names::full_name(s.name(), &t.name);
                if !seen.insert(full_name.clone()) {
                    full_name = names::with_hash_suffix(&full_name, s.name(), &t.name);
                    seen.insert(full_name.clone());
                }
                out.push(McpToolInfo {
                    full_name,
                    server: s.name().to_string(),
                    tool: t.name.to_string(),
                    description: t.description.as_deref().unwrap_or_default().to_string(),
                    input_schema: Value::Object((*t.input_schema).clone()),
                });
            }
        }
        out
    }

    /// [`Self::tools`] as [`McpTool`]s, for the engine's `ToolRegistry`.
    pub async fn tools_as_registry_entries(&self) -> Vec<Arc<dyn Tool>> {
        self.tools()
            .await
            .into_iter()
            .map(|info| Arc::new(McpTool::new(self.clone(), info)) as Arc<dyn Tool>)
            .collect()
    }

    /// Calls `tool` on `server` with `args` (a JSON object, or null for
    /// none), connecting the server first if needed. `timeout` defaults to
    /// the server's `call_timeout_ms`. Returns the text content blocks
    /// joined by newlines (other blocks as their JSON); when the result has
    /// no content but structured content, that as JSON.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        args: Value,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<String, McpError> {
        let s = self.server(server)?;
        let cancelled = || McpError::Cancelled {
            server: server.to_string(),
            tool: tool.to_string(),
        };
        let arguments = match args {
            Value::Object(m) => Some(m),
            Value::Null => None,
            other => {
                return Err(McpError::InvalidArguments {
                    server: server.to_string(),
                    tool: tool.to_string(),
                    message: format!("expected a JSON object, got `{other}`"),
                });
            }
        };
        let conn = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(cancelled()),
            c = s.ensure() => c?,
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Some(a) = arguments {
            params = params.with_arguments(a);
        }
        let timeout = timeout.unwrap_or(Duration::from_millis(s.config.call_timeout_ms));
        // Dropping the call future (timeout, cancel) abandons the request;
        // the connection stays usable for other calls.
        let result = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(cancelled()),
            r = tokio::time::timeout(timeout, conn.service.call_tool(params)) => r,
        };
        let timed_out = || McpError::Timeout {
            server: server.to_string(),
            tool: tool.to_string(),
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        };
        match result {
            Err(_) => Err(timed_out()),
            Ok(Ok(r)) => {
                let (text, is_error) = render(r);
                if is_error {
                    Err(McpError::ToolFailed {
                        server: server.to_string(),
                        tool: tool.to_string(),
                        message: text,
                    })
                } else {
                    Ok(text)
                }
            }
            Ok(Err(ServiceError::Timeout { .. })) => Err(timed_out()),
            Ok(Err(ServiceError::McpError(e))) => Err(McpError::Rejected {
                server: server.to_string(),
                tool: tool.to_string(),
                message: e.message.to_string(),
            }),
            Ok(Err(e)) => {
                let transport_broke = matches!(
                    e,
                    ServiceError::TransportClosed
                        | ServiceError::TransportSend(_)
                        | ServiceError::Cancelled { .. }
                );
                if transport_broke || conn.is_closed() {
                    let error = conn.explain(e.to_string());
                    s.mark_broken(&conn, &error);
                    Err(McpError::ServerGone {
                        server: server.to_string(),
                        tool: tool.to_string(),
                        error,
                    })
                } else {
                    Err(McpError::Rejected {
                        server: server.to_string(),
                        tool: tool.to_string(),
                        message: e.to_string(),
                    })
                }
            }
        }
    }
}

/// A call result as text for the model, and whether it is an error.
fn render(r: CallToolResult) -> (String, bool) {
    let is_error = r.is_error.unwrap_or(false);
    let mut parts = Vec::new();
    for block in &r.content {
        // Via JSON so every content kind (image, audio, resource, link...)
        // is handled without matching rmcp's evolving enum.
        let v = serde_json::to_value(block).unwrap_or(Value::Null);
        match v.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(
                v.get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            ),
            _ => parts.push(v.to_string()),
        }
    }
    if parts.is_empty()
        && let Some(s) = &r.structured_content
    {
        parts.push(s.to_string());
    }
    (parts.join("\n"), is_error)
}

//! MCP servers through the engine API. The servers' tools are offered to the
//! model like built-ins (as `mcp__<server>__<tool>`), through the same policy.
//! Server configurations are persisted in the store's settings.

use gantry_tools::mcp::{McpServerConfig, McpServerStatus, McpStartupComplete, McpToolInfo};

use crate::engine_events::EngineEventKind;
use crate::{Engine, EngineError};

/// The store setting that holds the MCP server configurations (JSON).
pub const MCP_SERVERS_SETTING: &str = "mcp_servers";

/// MCP servers: register, connect, list their tools.
/// Get one from [`Engine::mcp`].
#[derive(Clone, Copy)]
pub struct Mcp<'e> {
    pub(crate) engine: &'e Engine,
}

impl Mcp<'_> {
    /// Registers an MCP server (persisted; replaces one of the same name).
    /// It connects on `start_mcp_servers` or `connect_mcp_server`.
    /// A stdio server is a command run outside the sandbox: refused below
    /// [`EngineConfig::max_sandbox`](crate::EngineConfig::max_sandbox)
    /// `danger-full-access`.
    pub async fn add_server(self, config: McpServerConfig) -> Result<(), EngineError> {
        if matches!(
            config.transport,
            gantry_tools::mcp::McpTransport::Stdio { .. }
        ) {
            self.engine
                .shared
                .config
                .check_client_command(&format!("MCP server {:?} (stdio)", config.name))?;
        }
        self.engine
            .shared
            .mcp
            .add(config)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        self.engine.save_mcp_servers().await
    }

    /// Removes an MCP server (disconnecting it); false if it was unknown.
    pub async fn remove_server(self, name: &str) -> Result<bool, EngineError> {
        let removed = self.engine.shared.mcp.remove(name);
        self.engine.save_mcp_servers().await?;
        Ok(removed)
    }

    /// Every registered server with its status.
    pub fn servers(self) -> Vec<McpServerStatus> {
        self.engine.shared.mcp.status()
    }

    /// The tools of the connected servers.
    pub async fn tools(self) -> Vec<McpToolInfo> {
        self.engine.shared.mcp.tools().await
    }

    /// Connects every enabled server in parallel, each within its startup
    /// timeout; returns the summary. Each server's progress and then the
    /// summary are published as engine events
    /// ([`EngineEventKind::McpStartupUpdate`], [`EngineEventKind::McpStartupComplete`]).
    pub async fn start_servers(self) -> McpStartupComplete {
        let summary = self
            .engine
            .shared
            .mcp
            .start_all(|update| {
                self.engine
                    .publish(None, EngineEventKind::McpStartupUpdate(update))
            })
            .await;
        self.engine
            .publish(None, EngineEventKind::McpStartupComplete(summary.clone()));
        summary
    }

    /// Connects one server now.
    pub async fn connect(self, name: &str) -> Result<(), EngineError> {
        self.engine
            .shared
            .mcp
            .connect(name)
            .await
            .map_err(|e| EngineError::InvalidInput(e.to_string()))
    }

    /// Disconnects one server.
    pub fn disconnect(self, name: &str) -> Result<(), EngineError> {
        self.engine
            .shared
            .mcp
            .disconnect(name)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))
    }
}

impl Engine {
    async fn save_mcp_servers(&self) -> Result<(), EngineError> {
        let json = serde_json::to_string(&self.shared.mcp.list())
            .map_err(|e| EngineError::InvalidInput(format!("cannot store MCP servers: {e}")))?;
        self.shared
            .store
            .put_setting(MCP_SERVERS_SETTING, &json)
            .await?;
        Ok(())
    }

    /// Adds the servers stored by earlier runs (at start).
    pub(crate) async fn load_mcp_servers(&self) -> Result<(), EngineError> {
        let Some(json) = self.shared.store.setting(MCP_SERVERS_SETTING).await? else {
            return Ok(());
        };
        let configs: Vec<McpServerConfig> = match serde_json::from_str(&json) {
            Ok(configs) => configs,
            Err(e) => {
                tracing::warn!(error = %e, "ignoring unreadable stored MCP servers");
                return Ok(());
            }
        };
        for config in configs {
            let name = config.name.clone();
            if let Err(e) = self.shared.mcp.add(config) {
                tracing::warn!(server = %name, error = %e, "ignoring a stored MCP server");
            }
        }
        Ok(())
    }
}

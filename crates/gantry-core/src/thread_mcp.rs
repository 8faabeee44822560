//! MCP servers of one thread (a runner's thread brings its own): offered to
//! that thread's turns only, beside the engine-wide ones, each thread's in
//! a manager of its own, so a server's tools and process never reach
//! another thread. Persisted in one store setting (thread id to configs) so
//! they come back after a restart, disconnected until asked.

use std::collections::BTreeMap;
use std::sync::Mutex;

use gantry_tools::mcp::{McpManager, McpServerConfig, McpStartupComplete};
use gantry_types::ThreadId;

use crate::mcp_api::Mcp;
use crate::{Engine, EngineError};

/// The store setting holding every thread's MCP servers (JSON object:
/// thread id to its configs).
pub const THREAD_MCP_SERVERS_SETTING: &str = "thread_mcp_servers";

/// Each thread's servers.
#[derive(Default)]
pub(crate) struct ThreadMcp {
    managers: Mutex<BTreeMap<ThreadId, McpManager>>,
    /// Held while the setting is written, so the last write has the latest map.
    saving: tokio::sync::Mutex<()>,
}

impl ThreadMcp {
    /// The thread's manager, if it has servers (a cheap clone).
    pub(crate) fn of(&self, thread: &ThreadId) -> Option<McpManager> {
        self.lock().get(thread).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<ThreadId, McpManager>> {
        self.managers.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn configs(&self) -> BTreeMap<String, Vec<McpServerConfig>> {
        self.lock()
            .iter()
            .map(|(id, m)| (id.to_string(), m.list()))
            .collect()
    }
}

impl Mcp<'_> {
    /// Gives `thread` these MCP servers (replacing any it had, which are
    /// disconnected), persisted; their tools reach that thread's turns only,
    /// once connected ([`Mcp::start_thread_servers`]).
    pub async fn set_thread_servers(
        self,
        thread: &ThreadId,
        servers: Vec<McpServerConfig>,
    ) -> Result<(), EngineError> {
        let manager = McpManager::with_configs(servers)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        let old = {
            let mut managers = self.engine.shared.thread_mcp.lock();
            if manager.list().is_empty() {
                managers.remove(thread)
            } else {
                managers.insert(thread.clone(), manager)
            }
        };
        disconnect_all(old);
        self.engine.save_thread_mcp_servers().await
    }

    /// Removes the thread's servers (their processes are stopped).
    pub async fn remove_thread_servers(self, thread: &ThreadId) -> Result<(), EngineError> {
        let old = self.engine.shared.thread_mcp.lock().remove(thread);
        if old.is_none() {
            return Ok(());
        }
        disconnect_all(old);
        self.engine.save_thread_mcp_servers().await
    }

    /// The thread's server configurations.
    pub fn thread_servers(self, thread: &ThreadId) -> Vec<McpServerConfig> {
        self.engine
            .shared
            .thread_mcp
            .of(thread)
            .map(|m| m.list())
            .unwrap_or_default()
    }

    /// Connects the thread's servers in parallel, each within its startup
    /// timeout; the summary (empty when it has none).
    pub async fn start_thread_servers(self, thread: &ThreadId) -> McpStartupComplete {
        match self.engine.shared.thread_mcp.of(thread) {
            Some(manager) => manager.start_all(|_| {}).await,
            None => McpStartupComplete::default(),
        }
    }
}

fn disconnect_all(manager: Option<McpManager>) {
    if let Some(manager) = manager {
        for config in manager.list() {
            manager.remove(&config.name);
        }
    }
}

impl Engine {
    async fn save_thread_mcp_servers(&self) -> Result<(), EngineError> {
        let _saving = self.shared.thread_mcp.saving.lock().await;
        let json = serde_json::to_string(&self.shared.thread_mcp.configs()).map_err(|e| {
            EngineError::InvalidInput(format!("cannot store threads' MCP servers: {e}"))
        })?;
        self.shared
            .store
            .put_setting(THREAD_MCP_SERVERS_SETTING, &json)
            .await?;
        Ok(())
    }

    /// Adds the threads' servers stored by earlier runs (at start).
    pub(crate) async fn load_thread_mcp_servers(&self) -> Result<(), EngineError> {
        let Some(json) = self
            .shared
            .store
            .setting(THREAD_MCP_SERVERS_SETTING)
            .await?
        else {
            return Ok(());
        };
        let stored: BTreeMap<String, Vec<McpServerConfig>> = match serde_json::from_str(&json) {
            Ok(stored) => stored,
            Err(e) => {
                tracing::warn!(error = %e, "ignoring unreadable stored thread MCP servers");
                return Ok(());
            }
        };
        let mut managers = self.shared.thread_mcp.lock();
        for (thread, configs) in stored {
            match McpManager::with_configs(configs) {
                Ok(manager) => {
                    managers.insert(ThreadId::from(thread.as_str()), manager);
                }
                Err(e) => {
                    tracing::warn!(thread = %thread, error = %e, "ignoring a thread's stored MCP servers");
                }
            }
        }
        Ok(())
    }
}

//! Building and starting an engine.

use super::*;

/// Builds an [`Engine`].
pub struct EngineBuilder {
    store: Arc<dyn Store>,
    models: Arc<dyn ModelResolver>,
    tools: ToolRegistry,
    mcp: McpManager,
    lsp: LspManager,
    clock: Arc<dyn Clock>,
    config: EngineConfig,
    providers: Option<Arc<Providers>>,
    command_env_source: Option<Arc<dyn crate::CommandEnvSource>>,
    tool_host_source: Option<Arc<dyn crate::ToolHostSource>>,
}

impl EngineBuilder {
    /// An engine over `store`, resolving models with `models`, with the built-in tools.
    pub fn new(store: Arc<dyn Store>, models: Arc<dyn ModelResolver>) -> Self {
        Self {
            store,
            models,
            tools: ToolRegistry::builtin(),
            mcp: McpManager::new(),
            lsp: LspManager::new(),
            clock: Arc::new(SystemClock),
            config: EngineConfig::default(),
            providers: None,
            command_env_source: None,
            tool_host_source: None,
        }
    }

    /// Asks `source` for variables for each command as it starts (see
    /// [`crate::CommandEnvSource`]).
    pub fn command_env_source(mut self, source: Arc<dyn crate::CommandEnvSource>) -> Self {
        self.command_env_source = Some(source);
        self
    }

    /// Asks `source` who serves each tool call's file and command I/O
    /// (see [`crate::ToolHostSource`]).
    pub fn tool_host_source(mut self, source: Arc<dyn crate::ToolHostSource>) -> Self {
        self.tool_host_source = Some(source);
        self
    }

    /// Replaces the tool registry.
    pub fn tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// Uses `mcp` for MCP servers (its configured servers are kept; the ones
    /// stored by earlier `add_mcp_server` calls are added at start).
    pub fn mcp(mut self, mcp: McpManager) -> Self {
        self.mcp = mcp;
        self
    }

    /// Uses `lsp` for language servers (its languages and commands; the
    /// default knows rust-analyzer, pylsp, typescript-language-server,
    /// clangd and gopls).
    pub fn lsp(mut self, lsp: LspManager) -> Self {
        self.lsp = lsp;
        self
    }

    /// Replaces the clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Manages providers with `providers`, which also becomes the model resolver.
    pub fn providers(mut self, providers: Arc<Providers>) -> Self {
        self.models = providers.clone();
        self.providers = Some(providers);
        self
    }

    /// Replaces the configuration.
    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets [`EngineConfig::max_sandbox`], the loosest sandbox a client may
    /// give a thread.
    pub fn max_sandbox(mut self, mode: gantry_types::SandboxMode) -> Self {
        self.config.max_sandbox = mode;
        self
    }

    /// Sets [`EngineConfig::propagate_own_traces`]: model requests carry a
    /// `traceparent` for every turn, not only those a caller traced.
    pub fn propagate_own_traces(mut self, on: bool) -> Self {
        self.config.propagate_own_traces = on;
        self
    }

    /// Sets [`EngineConfig::max_rounds`], the model rounds a turn may take.
    pub fn max_rounds(mut self, rounds: u32) -> Self {
        self.config.max_rounds = rounds.max(1);
        self
    }

    /// Starts the engine: its store writer, then crash recovery (turns left
    /// running by a dead process are closed as interrupted).
    pub async fn start(self) -> Result<Engine, EngineError> {
        let cursor = self.store.last_cursor().await?;
        let bus = Arc::new(Bus::new(
            self.store.clone(),
            self.config.subscriber_buffer,
            cursor,
        ));
        let events = EngineEventBus::new(self.config.subscriber_buffer);
        let writer = Writer::spawn(self.store.clone(), bus.clone(), {
            let (events, clock) = (events.clone(), self.clock.clone());
            move |error: Option<&str>| {
                events.publish(EngineEvent {
                    seq: 0,
                    ts: clock.now_ms(),
                    thread_id: None,
                    kind: EngineEventKind::StoreHealth {
                        error: error.map(str::to_owned),
                    },
                })
            }
        });
        if let Some(dir) = self.config.data_dir.clone() {
            // A rewind a crash cut short is finished before any thread runs.
            let _ = tokio::task::spawn_blocking(move || {
                crate::engine::checkpoints::finish_interrupted_rewinds(&dir)
            })
            .await;
        }
        let shell_snapshots = shell_snapshots(&self.config);
        let private_temps = private_temps(&self.config);
        let lsp_tmp = private_temps.as_ref().map(|t| t.for_thread("lsp"));
        self.lsp.set_sandbox(lsp_sandbox(&self.config, lsp_tmp));
        let engine = Engine {
            shared: Arc::new(Shared {
                store: self.store,
                bus,
                events,
                writer,
                tools: self.tools,
                mcp: self.mcp,
                thread_mcp: Default::default(),
                lsp: self.lsp,
                models: self.models,
                clock: self.clock,
                config: self.config,
                providers: self.providers,
                cron: Default::default(),
                endpoints: Default::default(),
                command_env: Default::default(),
                command_env_source: self.command_env_source,
                tool_host_source: self.tool_host_source,
                shell_snapshots,
                private_temps,
                cells: Default::default(),
            }),
        };
        engine.load_mcp_servers().await?;
        engine.load_thread_mcp_servers().await?;
        engine.forward_lsp_events();
        for id in engine.shared.store.running_threads().await? {
            // One thread that cannot be loaded (a corrupt row) stays
            // unloaded and is reported; every other thread still starts.
            if let Err(e) = engine.actor(&id).await {
                tracing::error!(thread = %id, error = %e, "cannot recover thread; it stays as stored");
            }
        }
        Ok(engine)
    }
}

/// What a language server may touch: what a command under
/// `workspace-write` may, without the network, with the server's root as
/// its workspace, since it runs the workspace's code (build scripts,
/// plugins) that the model may have written. Where this machine cannot
/// enforce that, its commands cannot be sandboxed either (they run under
/// `danger-full-access` or not at all), and its language servers run
/// unconfined as before. Their temp dir is `tmp` (else the shared one).
fn lsp_sandbox(config: &EngineConfig, tmp: Option<PathBuf>) -> gantry_tools::lsp::LspSandbox {
    use gantry_types::SandboxMode;
    let config = config.clone();
    let enforceable = gantry_tools::SandboxSupport::probe()
        .check(SandboxMode::WorkspaceWrite)
        .map_err(|e| tracing::warn!(error = %e, "language servers run unsandboxed"))
        .is_ok();
    Arc::new(move |root: &std::path::Path| {
        let mode = if enforceable {
            SandboxMode::WorkspaceWrite
        } else {
            SandboxMode::DangerFullAccess
        };
        let mut policy = config.sandbox_policy(mode, root);
        policy.private_tmp = tmp.clone();
        policy
    })
}

/// The threads' private temp dirs. A data dir that cannot hold them costs
/// privacy, not service: commands share the temp dir, as without
/// namespaces, and the log says so.
fn private_temps(config: &crate::EngineConfig) -> Option<gantry_tools::sandbox::PrivateTemps> {
    match gantry_tools::sandbox::PrivateTemps::new(config.data_dir.as_deref()) {
        Ok(temps) => Some(temps),
        Err(e) => {
            tracing::warn!(
                error = %e,
                "cannot make the threads' private temp dirs; sandboxed commands share the temp dir"
            );
            None
        }
    }
}

/// The snapshots of the login profile, unless turned off. A data dir that
/// cannot hold them only costs speed: commands run the profile each time.
fn shell_snapshots(config: &crate::EngineConfig) -> Option<Arc<gantry_tools::ShellSnapshots>> {
    if !config.shell_snapshot {
        return None;
    }
    let dir = config.data_dir.as_ref().map(|d| d.join("shell-snapshots"));
    match gantry_tools::ShellSnapshots::new(dir.as_deref()) {
        Ok(snapshots) => Some(Arc::new(snapshots)),
        Err(e) => {
            tracing::warn!(
                error = %e,
                "cannot keep shell snapshots; commands run the login profile each time"
            );
            None
        }
    }
}

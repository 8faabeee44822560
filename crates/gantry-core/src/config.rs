//! Engine settings and the model resolver port.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gantry_llm::ModelClient;
use gantry_tools::{SandboxPolicy, ToolLimits};
use gantry_types::{ModelInfo, SandboxMode};

/// Tunables of the engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Model rounds a turn may run before it is stopped.
    pub max_rounds: u32,
    /// Model used when a thread is created without one.
    pub default_model: String,
    /// Limits for tool calls.
    pub tool_limits: ToolLimits,
    /// Per-subscriber buffer of live notifications; a subscriber further
    /// behind is told it lagged.
    pub subscriber_buffer: usize,
    /// Share of the model's context window (0..1) a request may fill before
    /// the history is compacted first.
    pub compact_at: f64,
    /// Reasoning effort asked of models that support it (`low`, `medium`,
    /// `high`, ...); `None` leaves it to the provider.
    pub reasoning: Option<String>,
    /// Where the engine keeps files of its own (agents' installed skills
    /// under `agents/<id>/skills`). `None`: installing skill packages is
    /// refused.
    pub data_dir: Option<PathBuf>,
    /// Paths sandboxed commands may not read besides the data dir (which
    /// never is, but for its `agents/` skills and workspaces inside it):
    /// e.g. a configuration file holding keys.
    pub sandbox_protected: Vec<PathBuf>,
    /// How long a thread stays loaded with nothing to do (no turn, no
    /// pending approval, no session grants or loaded skills) before its
    /// actor is evicted; it loads again from the log on its next use.
    /// `None`: never.
    pub evict_idle_after: Option<std::time::Duration>,
    /// Whether commands take the user's login profile from a snapshot taken
    /// once (in the data dir's `shell-snapshots/`, or a temp dir without
    /// one) instead of running it before every command (`bash -lc`).
    pub shell_snapshot: bool,
    /// Whether a turn that offers `shell` takes the snapshot while its
    /// first model request runs, instead of when the model's first command
    /// comes (which then waits for the profile). Off by default: an
    /// embedding that never runs a command should never run the user's
    /// profile; the `gantry` binary turns it on with `shell_snapshot`.
    pub shell_snapshot_ahead: bool,
    /// Workspaces the operator trusts, each with the folders inside it: there
    /// the `allowed-tools` of the workspace's own skills (`.gantry/skills`,
    /// `.claude/skills`) become allow rules. Elsewhere such a skill adds
    /// instructions but no rights, since the model (or a cloned repository)
    /// can write it. Must come from outside any workspace (a flag, the
    /// operator's config file). Empty by default.
    pub trusted_workspaces: Vec<PathBuf>,
    /// The loosest sandbox a client may give a thread: a looser one is
    /// refused when a thread is created or its policy changed, and below
    /// `danger-full-access` no approval reruns a failed command outside the
    /// sandbox. `danger-full-access` (no ceiling) by default, for an
    /// embedding whose only client is its own code; a server lowers it.
    pub max_sandbox: SandboxMode,
    /// Whether the model requests of a turn no caller traced carry a W3C
    /// `traceparent` too (a turn continuing a caller's trace always passes
    /// it on). Off by default: a trace of Gantry's own means something to
    /// the provider only when its spans are exported; a server turns it on
    /// with its traces.
    pub propagate_own_traces: bool,
}

impl EngineConfig {
    /// The sandbox of a command under `mode` in `workspace`: the mode's
    /// default, with the data dir and `sandbox_protected` kept unreadable.
    pub(crate) fn sandbox_policy(&self, mode: SandboxMode, workspace: &Path) -> SandboxPolicy {
        let mut policy = SandboxPolicy::new(mode, workspace);
        if let Some(dir) = &self.data_dir {
            policy.protected.push(dir.clone());
            policy.protected_readable.push(dir.join("agents"));
        }
        policy
            .protected
            .extend(self.sandbox_protected.iter().cloned());
        policy
    }

    /// `Ok` if `mode` stays within [`EngineConfig::max_sandbox`], else why
    /// not (`InvalidInput`): what the engine answers a thread's creation or
    /// policy, and what an adapter checks a default against.
    pub fn check_sandbox(&self, mode: SandboxMode) -> Result<(), crate::EngineError> {
        if mode <= self.max_sandbox {
            return Ok(());
        }
        Err(crate::EngineError::InvalidInput(format!(
            "sandbox `{}` is looser than this server allows: at most `{}`",
            mode.as_str(),
            self.max_sandbox.as_str()
        )))
    }

    /// `Ok` if a client may have this server run `what`, a command of the
    /// client's choosing outside any sandbox (an MCP stdio server, a
    /// scheduled command): only where [`EngineConfig::max_sandbox`] is
    /// `danger-full-access`, since such a command has every right the
    /// server has. Else why not (`InvalidInput`), saying what to do.
    pub fn check_client_command(&self, what: &str) -> Result<(), crate::EngineError> {
        if self.max_sandbox == SandboxMode::DangerFullAccess {
            return Ok(());
        }
        Err(crate::EngineError::InvalidInput(format!(
            "{what} would run a command of the client's choosing outside the sandbox, \
             which this server allows no client (its sandbox is at most `{}`): \
             configure it in the server's config file, or start the server with \
             --max-sandbox danger-full-access",
            self.max_sandbox.as_str()
        )))
    }

    /// Whether `workspace` (canonical, as a thread keeps it) is one of
    /// [`EngineConfig::trusted_workspaces`] or inside one. Reads the
    /// filesystem (each entry is compared by its real path): call it off
    /// the async threads.
    pub fn trusts_workspace(&self, workspace: &Path) -> bool {
        self.trusted_workspaces.iter().any(|dir| {
            // An empty path is a prefix of every path: it must trust nothing.
            if dir.as_os_str().is_empty() {
                return false;
            }
            // A dir that cannot be resolved (not there yet) is compared as given.
            let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
            workspace.starts_with(real)
        })
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            max_rounds: 50,
            default_model: "gpt-4.1".to_owned(),
            tool_limits: ToolLimits::default(),
            subscriber_buffer: 4096,
            compact_at: 0.8,
            reasoning: None,
            data_dir: None,
            sandbox_protected: Vec::new(),
            evict_idle_after: Some(std::time::Duration::from_secs(600)),
            shell_snapshot: true,
            shell_snapshot_ahead: false,
            trusted_workspaces: Vec::new(),
            max_sandbox: SandboxMode::DangerFullAccess,
            propagate_own_traces: false,
        }
    }
}

/// Finds the client that serves a model id.
pub trait ModelResolver: Send + Sync {
    /// The client for `model`, or a one-line reason it has none.
    fn resolve(&self, model: &str) -> Result<Arc<dyn ModelClient>, String>;

    /// What the catalog knows about `model` (prices, context window), if anything.
    fn model_info(&self, _model: &str) -> Option<ModelInfo> {
        None
    }

    /// The reasoning effort to send for `model` when `requested` is asked:
    /// `requested` if the catalog says the model takes one, else none (a
    /// model without the setting, or unknown to the catalog, gets none).
    fn reasoning_for(&self, model: &str, requested: Option<&str>) -> Option<String> {
        let requested = requested.filter(|r| !r.trim().is_empty())?;
        self.model_info(model)
            .filter(|info| info.reasoning)
            .map(|_| requested.to_owned())
    }
}

/// Serves every model id with one client (one provider).
pub struct SingleModel(pub Arc<dyn ModelClient>);

impl ModelResolver for SingleModel {
    fn resolve(&self, _model: &str) -> Result<Arc<dyn ModelClient>, String> {
        Ok(self.0.clone())
    }
}

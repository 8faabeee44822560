//! What a tool call gets from the engine besides its arguments.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::sandbox::SandboxPolicy;

/// Receives streaming output (command output chunks) while a tool runs. The
/// tool awaits each chunk before reading more: a receiver that cannot keep
/// up slows the tool down (back-pressure) instead of buffering without limit.
pub type OutputSink = Arc<dyn Fn(String) -> OutputTaken + Send + Sync>;

/// What an [`OutputSink`] returns: ready once the chunk is taken.
pub type OutputTaken = Pin<Box<dyn Future<Output = ()> + Send>>;

/// An [`OutputSink`] that takes each chunk at once (a collector, a log).
pub fn output_sink(take: impl Fn(&str) + Send + Sync + 'static) -> OutputSink {
    Arc::new(move |chunk: String| {
        take(&chunk);
        Box::pin(std::future::ready(()))
    })
}

/// Told a command's OS process id as soon as its process started (the
/// engine records it, so clients see the pid of a command still running);
/// ready once it is taken.
pub type ProcessSink = Arc<dyn Fn(u32) -> OutputTaken + Send + Sync>;

/// A [`ProcessSink`] that takes nothing (tools run without an engine).
pub fn ignore_process() -> ProcessSink {
    Arc::new(|_| Box::pin(std::future::ready(())))
}

/// Limits applied to tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimits {
    /// A shell command is killed (with its process group) after this long.
    pub shell_timeout: Duration,
    /// Command output kept for the item and the model; the rest is dropped
    /// with a truncation marker.
    pub output_cap_bytes: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            shell_timeout: Duration::from_secs(600),
            output_cap_bytes: 64 * 1024,
        }
    }
}

/// Per-call context.
#[derive(Clone)]
pub struct ToolContext {
    /// The thread's workspace, canonicalized. File tools stay inside it.
    pub workspace: PathBuf,
    /// Fires on interrupt.
    pub cancel: CancellationToken,
    /// Streaming output goes here.
    pub output: OutputSink,
    /// A command's process id goes here once it started.
    pub process_started: ProcessSink,
    /// Limits.
    pub limits: ToolLimits,
    /// The OS sandbox for shell commands; `read-only` also stops the file
    /// tools from writing. The engine sets it from the thread's policy.
    pub sandbox: SandboxPolicy,
    /// Variables added to the environment of the commands tools start (a
    /// client's `Initialize.env`), over the server's own.
    pub env: Arc<BTreeMap<String, String>>,
    /// Variables minted for this one command (a host's per-command
    /// credentials), added after `env`. Unlike `env`, they do not select
    /// the shell snapshot, so a fresh token does not mean a fresh snapshot.
    pub minted_env: Vec<(String, String)>,
    /// Where `shell` takes the login profile from once; `None`: each
    /// command runs `bash -lc`.
    pub shell_snapshots: Option<Arc<crate::ShellSnapshots>>,
    /// File and command I/O a host serves itself (none: the tools do it).
    pub host: crate::host::ToolHost,
    /// The model's id for this call, when it comes from one (a host shows
    /// the call's command under it).
    pub call_id: Option<String>,
}

impl ToolContext {
    /// A context with no output sink, default limits and NO sandbox
    /// (`danger-full-access`), for tests and one-off calls. Whoever runs
    /// an agent's calls sets `sandbox` from the thread's policy (e.g.
    /// [`SandboxPolicy::new`]`(mode, &workspace)`); it is not defaulted to
    /// `workspace-write` here so that a context built without a policy
    /// behaves as it always did rather than failing on a machine that
    /// cannot sandbox.
    pub fn new(workspace: PathBuf) -> Self {
        Self {
            workspace,
            cancel: CancellationToken::new(),
            output: output_sink(|_| {}),
            process_started: ignore_process(),
            limits: ToolLimits::default(),
            sandbox: SandboxPolicy::danger_full_access(),
            env: Arc::default(),
            minted_env: Vec::new(),
            shell_snapshots: None,
            host: crate::host::ToolHost::default(),
            call_id: None,
        }
    }
}

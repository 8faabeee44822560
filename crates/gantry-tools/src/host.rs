//! Ports through which a host serves the agent's file and command tools
//! itself (an editor: its buffers, its terminals) instead of the local
//! disk and shell. The tools still resolve and check every path against
//! the workspace first, and still build their items (diffs, output, exit
//! codes) the same way; only the I/O goes through the host. A tool whose
//! context has no host does its own I/O, as always.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::OutputSink;

/// Reads and writes text files for the file tools (`read_file`,
/// `write_file`, `edit_file`).
#[async_trait]
pub trait FileAccess: Send + Sync {
    /// The whole text of the file at `path` (absolute, inside the
    /// workspace), or why it cannot be read.
    async fn read_text(&self, path: &Path) -> Result<String, String>;
    /// Replaces the file at `path` with `content`, creating it.
    async fn write_text(&self, path: &Path, content: &str) -> Result<(), String>;
}

/// One command for a [`CommandRunner`].
pub struct HostCommand<'a> {
    /// The command line, run by bash.
    pub command: &'a str,
    /// Its working directory (inside the workspace).
    pub cwd: &'a Path,
    /// Variables over the host's environment: the command environment
    /// minus its secrets (never minted credentials, never a key).
    pub env: Vec<(String, String)>,
    /// The model's id of the call it runs for, if any.
    pub call_id: Option<&'a str>,
    /// Output, as it comes (a runner that only has it at the end may give
    /// it all at once in [`CommandExit::output`] instead).
    pub output: OutputSink,
    /// Fires on interrupt: the runner stops the command and returns.
    pub cancel: CancellationToken,
    /// The command is stopped after this long.
    pub timeout: Duration,
    /// Output the item keeps; the runner may keep less.
    pub output_cap: usize,
}

/// How a command a [`CommandRunner`] ran ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandExit {
    /// Its output (stdout and stderr).
    pub output: String,
    /// Its exit code; `None` when a signal ended it or it was stopped.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<String>,
    /// It was stopped: interrupted.
    pub interrupted: bool,
    /// It was stopped: its time was up.
    pub timed_out: bool,
}

/// Runs the `shell` tool's commands.
#[async_trait]
pub trait CommandRunner: Send + Sync {
    /// Runs `command` to its end (or its stop); `Err` when it could not run.
    async fn run(&self, command: HostCommand<'_>) -> Result<CommandExit, String>;
}

/// What a host serves for one thread's tool calls (nothing by default).
#[derive(Clone, Default)]
pub struct ToolHost {
    /// The file tools' reads and writes.
    pub files: Option<Arc<dyn FileAccess>>,
    /// The shell tool's commands.
    pub commands: Option<Arc<dyn CommandRunner>>,
}

impl std::fmt::Debug for ToolHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolHost")
            .field("files", &self.files.is_some())
            .field("commands", &self.commands.is_some())
            .finish()
    }
}

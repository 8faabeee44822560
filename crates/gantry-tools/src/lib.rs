//! Tools the agent can call. The engine runs every tool through the [`Tool`]
//! port; this crate holds the port, the registry, and the built-ins: `shell`,
//! `read_file`, `write_file`, `edit_file`, `list_dir`, `glob`, `grep`,
//! `todo_write`; the language server client (`lsp`), the MCP client
//! (`mcp`), skills (`skills`), the OS sandbox for commands (`sandbox`),
//! and the ports through which a host serves file and command I/O itself
//! (`host`).

mod common;
mod context;
mod edit_file;
mod glob;
mod grep;
pub mod host;
mod list_dir;
pub mod lsp;
pub mod mcp;
mod read_file;
mod registry;
pub mod sandbox;
pub mod shell;
pub mod skills;
mod todo_write;
mod walk;
pub mod workspace_path;
mod write_file;

pub use context::{
    OutputSink, OutputTaken, ProcessSink, ToolContext, ToolLimits, ignore_process, output_sink,
};
pub use edit_file::EditFileTool;
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use list_dir::ListDirTool;
pub use read_file::ReadFileTool;
pub use registry::ToolRegistry;
pub use sandbox::{SandboxError, SandboxPolicy, SandboxSupport};
pub use shell::{GroupGuard, HeadTail, Launch, ShellSnapshots, ShellTool};
pub use todo_write::TodoWriteTool;
pub use write_file::WriteFileTool;

use async_trait::async_trait;
use gantry_types::{ItemKind, ToolSpec};
use serde_json::Value;

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    /// The tool did its job (a command with a non-zero exit code counts).
    Ok,
    /// The tool could not do its job; the output says why.
    Error,
    /// The call was cancelled (interrupt); any process it started is gone.
    Interrupted,
}

/// The result of a tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// How it ended.
    pub status: ToolStatus,
    /// What the model is told.
    pub model_output: String,
    /// The item's final details.
    pub item: ItemKind,
}

/// The tool port.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and argument schema for the model.
    fn spec(&self) -> ToolSpec;

    /// The item shown while the call runs, from its (valid JSON) arguments.
    fn start_item(&self, args: &Value, ctx: &ToolContext) -> ItemKind;

    /// Whether a call may change anything outside its own output (files,
    /// processes, the network). The engine stores a call's start before
    /// running one that may (write-ahead), so a crash never hides what it
    /// did; a call that only reads needs no such wait. True unless the
    /// tool is known to only read.
    fn has_side_effects(&self) -> bool {
        true
    }

    /// Runs the call. Never panics on bad arguments: they become
    /// [`ToolStatus::Error`] with a message for the model. Returns promptly
    /// with [`ToolStatus::Interrupted`] once `ctx.cancel` fires.
    async fn run(&self, args: Value, ctx: ToolContext) -> ToolOutput;
}

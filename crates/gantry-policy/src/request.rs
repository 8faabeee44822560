//! What a tool call is, as the policy sees it: the request itself, its
//! lane, and whether it is known to be read-only.

use std::path::Path;

use gantry_types::Lane;
use serde_json::Value;

use crate::safe_commands::is_safe_command_line;
use crate::shell::analyze;

/// One tool call to decide on.
#[derive(Debug, Clone, Copy)]
pub struct ToolRequest<'a> {
    /// Gantry tool name: `shell`, `read_file`, ..., `mcp__server__tool`.
    pub tool: &'a str,
    /// The call's arguments as the model sent them.
    pub args: &'a Value,
    /// The thread's workspace directory; relative paths resolve against it.
    pub workspace: &'a Path,
}

impl ToolRequest<'_> {
    /// A string argument of the call, if the model sent one.
    pub(crate) fn arg(&self, name: &str) -> Option<&str> {
        self.args.get(name).and_then(Value::as_str)
    }
}

/// Tools with no effect outside the thread itself (and, for the memory
/// tools, its agent's shared memory in the engine's own store).
pub const THREAD_STATE_TOOLS: [&str; 4] = ["todo_write", "skill", "remember", "recall"];

/// The lane of a tool call: the read-only built-ins (the language-server
/// queries included) are `query`; everything
/// else, unknown and MCP tools included, is `execute`, because its effects
/// are not known. (`control` and `generate` are the engine's own work, never
/// a model's tool call.)
pub fn lane_of(tool: &str) -> Lane {
    match tool {
        "read_file" | "list_dir" | "glob" | "grep" => Lane::Query,
        t if is_lsp_query(t) => Lane::Query,
        _ => Lane::Execute,
    }
}

/// The language-server tools: they only read (files through the server).
/// Rules name them like any tool (`lsp_hover`, `lsp_*`).
fn is_lsp_query(tool: &str) -> bool {
    matches!(
        tool,
        "lsp_hover" | "lsp_definition" | "lsp_references" | "lsp_symbols" | "lsp_diagnostics"
    )
}

/// Whether the `untrusted` policy runs `req` without asking: the read-only
/// built-ins (the language-server queries included), and shell command
/// lines made only of known-safe commands.
pub fn is_known_safe(req: &ToolRequest<'_>) -> bool {
    match req.tool {
        "read_file" | "list_dir" | "glob" | "grep" => true,
        t if is_lsp_query(t) => true,
        "shell" => req
            .arg("command")
            .is_some_and(|c| is_safe_command_line(&analyze(c))),
        _ => false,
    }
}

//! The tools a turn offers its model, fixed when the turn starts so the
//! model's tool list does not change under it.

use std::sync::Arc;

use gantry_tools::ToolRegistry;
use gantry_tools::skills::SkillTool;

use super::{TurnMode, TurnSpec, read_skills};
use crate::engine::Shared;

/// The built-ins, the tools of connected MCP servers (the engine's and
/// the thread's own), the `skill` tool
/// when the thread has skills, the memory tools (`remember`, `recall`),
/// the `lsp_*` tools while a language
/// server runs for the thread's workspace, and `request_user_input` when
/// someone can answer (see `crate::user_input::offered`); only those the
/// turn allows.
pub(super) async fn turn_tools(shared: &Shared, spec: &TurnSpec) -> ToolRegistry {
    let mut tools = shared.tools.clone();
    for tool in shared.mcp.tools_as_registry_entries().await {
        tools.register(tool);
    }
    // The thread's own servers, after the engine's: theirs win a name.
    if let Some(own) = shared.thread_mcp.of(&spec.thread_id) {
        for tool in own.tools_as_registry_entries().await {
            tools.register(tool);
        }
    }
    if !read_skills(&spec.skills).names().is_empty() {
        tools.register(Arc::new(SkillTool::new(spec.skills.clone())));
    }
    for tool in crate::memory::tools(shared, &spec.thread_id, spec.agent_id.as_ref()) {
        tools.register(tool);
    }
    if shared.lsp.serves(&spec.cwd) {
        for tool in shared.lsp.tools() {
            tools.register(tool);
        }
    }
    let attended = crate::user_input::offered(&spec.live.borrow().policy, spec.unattended);
    if matches!(spec.mode, TurnMode::Chat) && attended {
        tools.register(Arc::new(crate::user_input::RequestUserInputTool));
    }
    if let Some(allowed) = &spec.allowed_tools {
        tools.retain(|name| allowed.iter().any(|a| a == name));
    }
    tools
}

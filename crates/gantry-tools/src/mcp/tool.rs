//! [`McpTool`]: one MCP server tool behind the [`Tool`] port, so the engine
//! offers it, checks permissions on it (by its full name) and emits its
//! begin/end items like any built-in.

use async_trait::async_trait;
use gantry_types::{ItemKind, ToolSpec};
use serde_json::{Value, json};

use super::{McpError, McpManager, McpToolInfo};
use crate::common::{tool_call_error, tool_call_interrupted, tool_call_output, tool_call_start};
use crate::{Tool, ToolContext, ToolOutput};

/// One tool of one MCP server. Calls go through the shared [`McpManager`],
/// which reconnects the server if it went away.
#[derive(Clone)]
pub struct McpTool {
    manager: McpManager,
    info: McpToolInfo,
}

impl McpTool {
    /// The tool `info` describes, called through `manager`.
    pub fn new(manager: McpManager, info: McpToolInfo) -> Self {
        Self { manager, info }
    }

    /// What the server said about the tool.
    pub fn info(&self) -> &McpToolInfo {
        &self.info
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        let description = if self.info.description.trim().is_empty() {
            format!(
                "Tool `{}` of MCP server `{}`.",
                self.info.tool, self.info.server
            )
        } else {
            self.info.description.clone()
        };
        // Providers require an object schema; a server that sends none (or
        // something else) gets an open one rather than a rejected request.
        let parameters = if self.info.input_schema.get("type") == Some(&json!("object")) {
            self.info.input_schema.clone()
        } else {
            json!({"type": "object"})
        };
        ToolSpec {
            name: self.info.full_name.clone(),
            description,
            parameters,
        }
    }

    fn start_item(&self, args: &Value, _ctx: &ToolContext) -> ItemKind {
        tool_call_start(&self.info.full_name, args)
    }

    async fn run(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let name = &self.info.full_name;
        let result = self
            .manager
            .call(
                &self.info.server,
                &self.info.tool,
                args.clone(),
                None,
                &ctx.cancel,
            )
            .await;
        match result {
            Ok(text) => tool_call_output(
                name,
                &args,
                Ok(cap_bytes(text, ctx.limits.output_cap_bytes)),
            ),
            Err(McpError::Cancelled { .. }) => tool_call_interrupted(name, &args),
            Err(e) => tool_call_error(name, &args, e.to_string()),
        }
    }
}

/// `s` cut to at most `cap` bytes (on a char boundary) with a note, so a
/// chatty server cannot flood the model's context.
fn cap_bytes(s: String, cap: usize) -> String {
    if s.len() <= cap {
        return s;
    }
    let mut end = cap;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n... [output truncated: {} of {} bytes shown]",
        &s[..end],
        end,
        s.len()
    )
}

//! `initialize`: versions, capabilities, who is who.

use serde::{Deserialize, Serialize};

/// `initialize`'s params.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequest {
    /// The latest version the client speaks.
    pub protocol_version: u16,
    /// What the client can do for the agent.
    #[serde(default)]
    pub client_capabilities: ClientCapabilities,
}

/// What the client offers (`ClientCapabilities`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// File system methods.
    #[serde(default)]
    pub fs: FileSystemCapabilities,
    /// `terminal/*` methods.
    #[serde(default)]
    pub terminal: bool,
    /// `elicitation/create` modes (absent or `null`: none).
    #[serde(default)]
    pub elicitation: Option<ElicitationCapabilities>,
}

impl ClientCapabilities {
    /// Whether the client renders form elicitations (what questions to
    /// the user become).
    pub fn elicits_forms(&self) -> bool {
        self.elicitation.is_some_and(|e| e.form.is_some())
    }
}

/// The elicitation modes the client offers (`ElicitationCapabilities`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct ElicitationCapabilities {
    /// Forms rendered from a schema.
    #[serde(default)]
    pub form: Option<Offered>,
    /// Sending the user to a URL.
    #[serde(default)]
    pub url: Option<Offered>,
}

/// A capability offered as an object (its fields, if any, unread).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Offered {}

/// `fs/*` methods the client offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSystemCapabilities {
    /// `fs/read_text_file`.
    #[serde(default)]
    pub read_text_file: bool,
    /// `fs/write_text_file`.
    #[serde(default)]
    pub write_text_file: bool,
}

/// `initialize`'s result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// The version chosen.
    pub protocol_version: u16,
    /// What the agent supports.
    pub agent_capabilities: AgentCapabilities,
    /// One `agent` method that needs nothing: the agent uses the
    /// configured providers.
    pub auth_methods: Vec<serde_json::Value>,
    /// Who the agent is.
    pub agent_info: Implementation,
}

/// What the agent supports (`AgentCapabilities`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `session/load`.
    pub load_session: bool,
    /// What prompts may carry.
    pub prompt_capabilities: PromptCapabilities,
    /// MCP transports beyond stdio.
    pub mcp_capabilities: McpCapabilities,
    /// `session/list` and friends.
    pub session_capabilities: SessionCapabilities,
}

/// What prompts may carry.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCapabilities {
    /// Image blocks.
    pub image: bool,
    /// Audio blocks.
    pub audio: bool,
    /// Embedded resources.
    pub embedded_context: bool,
}

/// MCP transports beyond stdio.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct McpCapabilities {
    /// Streamable HTTP.
    pub http: bool,
    /// SSE.
    pub sse: bool,
}

/// Session methods beyond the base ones.
#[derive(Debug, Clone, Serialize)]
pub struct SessionCapabilities {
    /// `session/list` (an empty object when supported).
    pub list: serde_json::Value,
}

/// A name and version (`Implementation`).
#[derive(Debug, Clone, Serialize)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Display name.
    pub title: String,
    /// Version.
    pub version: String,
}

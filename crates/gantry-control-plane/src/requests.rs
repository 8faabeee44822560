//! What the store keeps of a request sent to a runner: its kind, and the
//! parameters that recording its answer needs.

use gantry_runner_protocol::messages::Request;
use serde::{Deserialize, Serialize};

/// `CreateAgentRequest`.
pub(crate) const CREATE_AGENT: &str = "create_agent";
/// `DeleteAgentRequest`.
pub(crate) const DELETE_AGENT: &str = "delete_agent";
/// `CreateThreadRequest`.
pub(crate) const CREATE_THREAD: &str = "create_thread";
/// `DeleteThreadRequest`.
pub(crate) const DELETE_THREAD: &str = "delete_thread";
/// `CreateUserMessageRequest`.
pub(crate) const CREATE_USER_MESSAGE: &str = "create_user_message";
/// `InstallSkillsMpRequest`.
pub(crate) const INSTALL_SKILLS_MP: &str = "install_skills_mp";
/// `InterruptTurnRequest`.
pub(crate) const INTERRUPT_TURN: &str = "interrupt_turn";
/// Any other request (heartbeats are not recorded).
pub(crate) const OTHER: &str = "other";

/// The stored kind of a request.
pub(crate) fn kind(request: &Request) -> &'static str {
    match request {
        Request::CreateAgent { .. } => CREATE_AGENT,
        Request::DeleteAgent { .. } => DELETE_AGENT,
        Request::CreateThread(_) => CREATE_THREAD,
        Request::DeleteThread { .. } => DELETE_THREAD,
        Request::CreateUserMessage(_) => CREATE_USER_MESSAGE,
        Request::InstallSkills { .. } => INSTALL_SKILLS_MP,
        Request::InterruptTurn { .. } => INTERRUPT_TURN,
        Request::Heartbeat | Request::CodexConfiguration { .. } => OTHER,
    }
}

/// What recording the answer to a request needs: a new agent's SDK and
/// default model, a new thread's model, reasoning level and MCP servers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Params {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_level: Option<String>,
    /// A new thread's MCP servers, as kept (no secret values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<crate::ops::McpServerView>>,
}

impl Params {
    /// From the stored JSON; unreadable JSON reads as no parameters.
    pub(crate) fn parse(json: &str) -> Self {
        serde_json::from_str(json).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "stored request parameters are unreadable");
            Self::default()
        })
    }
}

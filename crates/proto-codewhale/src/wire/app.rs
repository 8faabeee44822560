//! Requests not tied to one thread (`AppRequest`), one-shot prompts
//! (`PromptRequest`), approval answers (`ApprovalDecisionRequest` with a
//! `ReviewDecision`) and the approval policy (`AskForApproval`), as in
//! `codewhale_protocol` 0.8.59.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::EventFrame;

/// A request about the server, tagged by `kind`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AppRequest {
    /// What the server offers.
    Capabilities,
    /// One configuration value.
    ConfigGet {
        /// Its key.
        key: String,
    },
    /// Sets a configuration value.
    ConfigSet {
        /// Its key.
        key: String,
        /// Its value.
        value: String,
    },
    /// Removes a configuration value.
    ConfigUnset {
        /// Its key.
        key: String,
    },
    /// Every configuration value.
    ConfigList,
    /// The models threads may use.
    Models,
    /// Threads loaded in memory.
    ThreadLoadedList,
}

/// The answer to an [`AppRequest`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppResponse {
    /// Whether it was done.
    pub ok: bool,
    /// What it answers.
    pub data: Value,
    /// Frames of what it did.
    #[serde(default)]
    pub events: Vec<EventFrame>,
}

/// A one-shot prompt: one turn, its answer and frames.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PromptRequest {
    /// The thread to run it on; a new one when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// What to ask.
    pub prompt: String,
    /// The model of the new thread (ignored with a thread).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The answer to a [`PromptRequest`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PromptResponse {
    /// The agent's last message.
    pub output: String,
    /// The model that answered.
    pub model: String,
    /// The turn's frames.
    #[serde(default)]
    pub events: Vec<EventFrame>,
}

/// When the agent must ask before acting.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AskForApproval {
    /// Ask unless the command is known to be safe.
    UnlessTrusted,
    /// Ask only to re-run a failed command.
    OnFailure,
    /// Ask when a rule says so.
    OnRequest,
    /// Refuse instead of asking, for the categories set.
    Reject {
        /// Prompts to leave the sandbox.
        sandbox_approval: bool,
        /// Prompts raised by rules.
        rules: bool,
        /// Questions of MCP servers.
        mcp_elicitations: bool,
    },
    /// Never ask.
    Never,
}

/// What a network policy rule does.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NetworkPolicyRuleAction {
    /// Allow the host.
    Allow,
    /// Deny the host.
    Deny,
}

/// An answer to an approval request, tagged by `type`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReviewDecision {
    /// Run it.
    Approved,
    /// Run it, and alike ones from now on.
    ApprovedExecpolicyAmendment,
    /// Run it, and alike ones for the rest of the session.
    ApprovedForSession,
    /// Run it with a network policy change.
    NetworkPolicyAmendment {
        /// The host.
        host: String,
        /// What to do with it.
        action: NetworkPolicyRuleAction,
    },
    /// Do not run it.
    Denied,
    /// Do not run it and end the turn.
    Abort,
}

/// A client's answer to an approval request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApprovalDecisionRequest {
    /// A [`ReviewDecision`]'s name (`approved`, `denied`, ...).
    pub decision: String,
    /// Remember it for alike requests (this session).
    #[serde(default)]
    pub remember: bool,
}

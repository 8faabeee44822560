//! Event frames, tagged by `event`, and what they carry, as in
//! `codewhale_protocol` 0.8.59.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ReviewDecision, ThreadGoal};

/// An MCP server's startup status.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum McpStartupStatus {
    /// Starting.
    Starting,
    /// Ready.
    Ready,
    /// Failed.
    Failed {
        /// Why.
        error: String,
    },
    /// Cancelled.
    Cancelled,
}

/// One MCP server's startup progress.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct McpStartupUpdateEvent {
    /// The server.
    pub server_name: String,
    /// Where it is.
    pub status: McpStartupStatus,
}

/// An MCP server that failed to start.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct McpStartupFailure {
    /// The server.
    pub server_name: String,
    /// Why.
    pub error: String,
}

/// Every MCP server's startup has ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct McpStartupCompleteEvent {
    /// Servers ready.
    pub ready: Vec<String>,
    /// Servers that failed.
    pub failed: Vec<McpStartupFailure>,
    /// Servers cancelled.
    pub cancelled: Vec<String>,
}

/// A network access asked for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct NetworkApprovalContext {
    /// The host.
    pub host: String,
    /// The protocol.
    pub protocol: String,
}

/// A network policy change proposed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct NetworkPolicyAmendment {
    /// The host.
    pub host: String,
    /// What to do with it.
    pub action: super::NetworkPolicyRuleAction,
}

/// A tool call waits for a human's approval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ExecApprovalRequestEvent {
    /// The model's call id.
    pub call_id: String,
    /// The id to answer with.
    pub approval_id: String,
    /// The turn.
    pub turn_id: String,
    /// The command line (the tool and its arguments for other tools).
    pub command: String,
    /// Where it runs.
    pub cwd: String,
    /// Why approval is needed.
    pub reason: String,
    /// The rule that matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_rule: Option<Box<str>>,
    /// Network access asked for (Gantry asks none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_approval_context: Option<NetworkApprovalContext>,
    /// Execution policy changes proposed.
    #[serde(default)]
    pub proposed_execpolicy_amendment: Vec<String>,
    /// Network policy changes proposed.
    #[serde(default)]
    pub proposed_network_policy_amendments: Vec<NetworkPolicyAmendment>,
    /// More permissions asked for.
    #[serde(default)]
    pub additional_permissions: Vec<String>,
    /// The answers the client may give.
    #[serde(default)]
    pub available_decisions: Vec<ReviewDecision>,
}

/// The channel of a response delta.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ResponseChannel {
    /// The answer.
    #[default]
    Text,
    /// The model's reasoning.
    Reasoning,
}

impl ResponseChannel {
    /// Whether it is the answer (then it is left out of a delta).
    pub const fn is_text(&self) -> bool {
        matches!(self, ResponseChannel::Text)
    }
}

/// One frame of what happens, tagged by `event`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventFrame {
    /// A model response started.
    ResponseStart {
        /// Its id.
        response_id: String,
    },
    /// Text of a response.
    ResponseDelta {
        /// The response.
        response_id: String,
        /// The text.
        delta: String,
        /// Answer or reasoning.
        #[serde(default, skip_serializing_if = "ResponseChannel::is_text")]
        channel: ResponseChannel,
    },
    /// A model response ended.
    ResponseEnd {
        /// Its id.
        response_id: String,
    },
    /// A tool call started.
    ToolCallStart {
        /// The response that made it.
        response_id: String,
        /// The tool.
        tool_name: String,
        /// Its arguments.
        arguments: Value,
    },
    /// A tool call's result.
    ToolCallResult {
        /// The response that made it.
        response_id: String,
        /// The tool.
        tool_name: String,
        /// The result (a `ToolOutput`).
        output: Value,
    },
    /// An MCP server's startup progressed.
    McpStartupUpdate {
        /// How.
        update: McpStartupUpdateEvent,
    },
    /// Every MCP server's startup ended.
    McpStartupComplete {
        /// How.
        summary: McpStartupCompleteEvent,
    },
    /// An MCP tool call started.
    McpToolCallBegin {
        /// The server.
        server_name: String,
        /// The tool.
        tool_name: String,
    },
    /// An MCP tool call ended.
    McpToolCallEnd {
        /// The server.
        server_name: String,
        /// The tool.
        tool_name: String,
        /// Whether it succeeded.
        ok: bool,
    },
    /// A command waits for approval.
    ExecApprovalRequest {
        /// What is asked.
        request: ExecApprovalRequestEvent,
    },
    /// A file change waits for approval.
    ApplyPatchApprovalRequest {
        /// What is asked.
        request: ExecApprovalRequestEvent,
    },
    /// 0.10: the agent asks the user structured questions; answered with
    /// `submit_user_input`.
    UserInputRequest {
        /// What is asked.
        request: super::v0_10::UserInputRequest,
    },
    /// An MCP server asks the user (Gantry sends none).
    ElicitationRequest {
        /// The server.
        server_name: String,
        /// The request.
        request_id: String,
        /// The question.
        prompt: String,
    },
    /// A command started.
    ExecCommandBegin {
        /// The command line.
        command: String,
        /// Where it runs.
        cwd: String,
    },
    /// A command's output.
    ExecCommandOutputDelta {
        /// The command line.
        command: String,
        /// Output (stdout and stderr).
        delta: String,
    },
    /// A command ended.
    ExecCommandEnd {
        /// The command line.
        command: String,
        /// Its exit code (-1 when killed or never run).
        exit_code: i32,
    },
    /// A file change started.
    PatchApplyBegin {
        /// The file.
        path: String,
    },
    /// A file change ended.
    PatchApplyEnd {
        /// The file.
        path: String,
        /// Whether it was applied.
        ok: bool,
    },
    /// A turn started.
    TurnStarted {
        /// Its id.
        turn_id: String,
    },
    /// A turn completed.
    TurnComplete {
        /// Its id.
        turn_id: String,
    },
    /// A turn ended early: interrupted, or failed.
    TurnAborted {
        /// Its id.
        turn_id: String,
        /// `interrupted`, or why it failed.
        reason: String,
    },
    /// The goal was set or changed.
    ThreadGoalUpdated {
        /// The goal now.
        goal: ThreadGoal,
    },
    /// The goal was removed.
    ThreadGoalCleared {
        /// The thread.
        thread_id: String,
    },
    /// Something went wrong.
    Error {
        /// The response it concerns (the turn's id when none).
        response_id: String,
        /// What.
        message: String,
    },
}

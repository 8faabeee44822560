//! The protocol's messages whatever the version: what the runner's and the
//! control plane's logic work with. A message that exists in one version
//! only is here too (agents in 0.2.0; heartbeats, interrupts, thread names
//! and token usage in 0.7.0); mapping it onto the other version is a
//! [`NotInVersion`](crate::NotInVersion). Where both versions share a
//! message or an enum, the 0.7.0 one is used (a superset of 0.2.0's).

use std::fmt;

pub use crate::v0_2::{AgentStatus, SkillMpStatus};
pub use crate::v0_7::{
    AgentSdk, AgentSdkStatus, CodexAuthType, CommandExecutionItem, ItemStatus, ItemType, LlmModel,
    ThreadGitSkill, ThreadGitSkillPackage, ThreadMcpServer, ThreadStatus, ThreadTokenUsageUpdate,
    TokenUsageBreakdown, TurnStatus,
};

/// What a runner offers at registration. An SDK's `status` and
/// `error_message` exist in 0.7.0 only: a 0.2.0 runner's read as unset.
#[derive(Clone, PartialEq, Default, Debug)]
pub struct Registration {
    /// The agent SDKs it runs, with their models.
    pub agent_sdks: Vec<AgentSdk>,
}

/// A request from the control plane.
#[derive(Clone, PartialEq, Debug)]
pub struct ServerMessage {
    /// Echoed by the replies (optional in 0.2.0, required in 0.7.0).
    pub request_id: Option<String>,
    /// What is asked.
    pub request: Request,
}

/// What the control plane asks.
#[derive(Clone, PartialEq, Debug)]
pub enum Request {
    /// 0.2.0: create an agent.
    CreateAgent {
        /// Its id.
        agent_id: String,
        /// The SDK that runs it.
        agent_sdk: String,
    },
    /// 0.2.0: delete an agent.
    DeleteAgent {
        /// Its id.
        agent_id: String,
    },
    /// Create a thread.
    CreateThread(CreateThread),
    /// Delete a thread.
    DeleteThread {
        /// Its agent (0.2.0 only).
        agent_id: Option<String>,
        /// The thread.
        thread_id: String,
    },
    /// Send a user message to a thread.
    CreateUserMessage(UserMessage),
    /// 0.2.0: install a skill package into an agent.
    InstallSkills {
        /// The agent.
        agent_id: String,
        /// The package.
        package_name: String,
    },
    /// 0.7.0: interrupt the thread's running turn.
    InterruptTurn {
        /// The thread.
        thread_id: String,
    },
    /// 0.7.0: is the runner alive? (answered with [`Payload::Heartbeat`]).
    Heartbeat,
    /// 0.7.0: configure the Codex SDK (the key is not kept here: no runner
    /// of Gantry's runs Codex).
    CodexConfiguration {
        /// How Codex would authenticate.
        auth_type: CodexAuthType,
    },
}

impl Request {
    /// The request's name on the wire, for messages and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Request::CreateAgent { .. } => "create_agent_request",
            Request::DeleteAgent { .. } => "delete_agent_request",
            Request::CreateThread(_) => "create_thread_request",
            Request::DeleteThread { .. } => "delete_thread_request",
            Request::CreateUserMessage(_) => "create_user_message_request",
            Request::InstallSkills { .. } => "install_skills_mp_request",
            Request::InterruptTurn { .. } => "interrupt_turn_request",
            Request::Heartbeat => "heartbeat_request",
            Request::CodexConfiguration { .. } => "codex_configuration_request",
        }
    }
}

/// `CreateThreadRequest`: 0.2.0 names the agent and lets the runner pick
/// the thread id; 0.7.0 names the thread and brings what its agent needs.
#[derive(Clone, PartialEq, Default)]
pub struct CreateThread {
    /// 0.2.0: the agent the thread belongs to.
    pub agent_id: Option<String>,
    /// 0.7.0: the thread's id, chosen by the control plane.
    pub thread_id: Option<String>,
    /// The model of its turns.
    pub model: String,
    /// Its reasoning level.
    pub reasoning_level: Option<String>,
    /// 0.7.0: added to the model's instructions.
    pub additional_model_instructions: Option<String>,
    /// 0.7.0: the MCP servers its agent gets.
    pub mcp_servers: Vec<ThreadMcpServer>,
    /// 0.7.0: skills to check out from git.
    pub git_skill_packages: Vec<ThreadGitSkillPackage>,
    /// 0.7.0 (required there): the thread's secret for calls back to the
    /// control plane. Never logged.
    pub cli_secret: Option<String>,
}

impl fmt::Debug for CreateThread {
    // MCP servers carry tokens and the CLI secret is one: names and counts only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let servers: Vec<&str> = self.mcp_servers.iter().map(|s| s.name.as_str()).collect();
        f.debug_struct("CreateThread")
            .field("agent_id", &self.agent_id)
            .field("thread_id", &self.thread_id)
            .field("model", &self.model)
            .field("reasoning_level", &self.reasoning_level)
            .field(
                "additional_model_instructions",
                &self.additional_model_instructions.as_ref().map(String::len),
            )
            .field("mcp_servers", &servers)
            .field("git_skill_packages", &self.git_skill_packages.len())
            .field(
                "cli_secret",
                &self.cli_secret.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// `CreateUserMessageRequest`.
#[derive(Clone, PartialEq, Debug, Default)]
pub struct UserMessage {
    /// 0.2.0: the thread's agent.
    pub agent_id: Option<String>,
    /// The thread.
    pub thread_id: String,
    /// The user's text.
    pub text: String,
    /// Steer a running turn instead of being refused.
    pub allow_steer: bool,
    /// Model for this message (and the thread's next ones).
    pub model: Option<String>,
    /// Reasoning level for this message.
    pub model_reasoning_level: Option<String>,
}

/// A runner's reply or update.
#[derive(Clone, PartialEq, Debug)]
pub struct ClientMessage {
    /// The request answered; unset on updates the runner sends by itself.
    pub request_id: Option<String>,
    /// What it says.
    pub payload: Payload,
}

/// What a runner says.
#[derive(Clone, PartialEq, Debug)]
pub enum Payload {
    /// The request was refused.
    RequestError {
        /// Why.
        error_message: String,
    },
    /// 0.2.0: an agent became ready or was deleted.
    Agent {
        /// The agent.
        agent_id: String,
        /// Its status.
        status: AgentStatus,
    },
    /// A thread became ready or was deleted.
    Thread {
        /// The thread.
        thread_id: String,
        /// Its status.
        status: ThreadStatus,
    },
    /// A turn started or ended.
    Turn(TurnUpdate),
    /// An item started, changed or ended.
    Item(ItemUpdate),
    /// 0.2.0: a skill package was installed into an agent.
    SkillPackage {
        /// The agent.
        agent_id: String,
        /// The package.
        package_name: String,
        /// Installed or deleted.
        status: SkillMpStatus,
    },
    /// 0.7.0: a thread's name changed (unset: cleared).
    ThreadName {
        /// The thread.
        thread_id: String,
        /// Its name.
        thread_name: Option<String>,
    },
    /// 0.7.0: the answer to a heartbeat.
    Heartbeat,
    /// 0.7.0: an SDK's status, models or error changed.
    Sdk(AgentSdk),
    /// 0.7.0: a device code for the user to sign Codex in with.
    CodexDeviceCode {
        /// The code.
        device_code: String,
    },
    /// 0.7.0: a thread's token usage after a turn's model call.
    TokenUsage(ThreadTokenUsageUpdate),
}

impl Payload {
    /// The payload's name on the wire, for messages and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Payload::RequestError { .. } => "request_error",
            Payload::Agent { .. } => "agent_update",
            Payload::Thread { .. } => "thread_update",
            Payload::Turn(_) => "turn_update",
            Payload::Item(_) => "item_update",
            Payload::SkillPackage { .. } => "skill_mp_update",
            Payload::ThreadName { .. } => "thread_name_update",
            Payload::Heartbeat => "heartbeat_response",
            Payload::Sdk(_) => "agent_sdk_update",
            Payload::CodexDeviceCode { .. } => "codex_device_code",
            Payload::TokenUsage(_) => "thread_token_usage_update",
        }
    }
}

/// `TurnUpdate`.
#[derive(Clone, PartialEq, Debug)]
pub struct TurnUpdate {
    /// The turn.
    pub sdk_turn_id: String,
    /// Running or completed.
    pub status: TurnStatus,
    /// 0.7.0 (required there): its thread.
    pub thread_id: Option<String>,
}

/// `ItemUpdate`.
#[derive(Clone, PartialEq, Debug)]
pub struct ItemUpdate {
    /// The item.
    pub sdk_item_id: String,
    /// Running or completed.
    pub status: ItemStatus,
    /// Its type; 0.2.0 knows the first five, the rest go as unknown there.
    pub item_type: ItemType,
    /// Its text, or a one-line summary.
    pub text: Option<String>,
    /// A command's command line, cwd, process and output.
    pub command_execution_item: Option<CommandExecutionItem>,
    /// 0.7.0 (required there): its thread.
    pub thread_id: Option<String>,
    /// 0.7.0 (required there): its turn.
    pub sdk_turn_id: Option<String>,
}

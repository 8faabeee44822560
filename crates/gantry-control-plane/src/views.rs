//! The JSON shapes of the HTTP API and of the thread update log, built from
//! the store's records.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::offers::SdkOffer;
use crate::store::{AgentRecord, ItemRecord, RunnerRecord, SkillRecord, ThreadRecord, TurnRecord};

/// A runner, as `GET /v1/runners` lists it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RunnerView {
    pub id: String,
    pub name: String,
    pub connected: bool,
    /// Connected and answering its heartbeats (0.7.0): it gets new work.
    pub healthy: bool,
    /// The protocol version it speaks (`0.2`, `0.7`).
    pub protocol: String,
    /// Whether `protocol` was pinned with `add-runner --protocol`.
    pub protocol_pinned: bool,
    pub sdks: Vec<SdkOffer>,
    pub running_turns: i64,
    pub agents: i64,
    pub created_at: i64,
    pub registered_at: Option<i64>,
}

impl RunnerView {
    /// The view of `runner`, offering `sdks`, with its load.
    pub(crate) fn new(
        runner: RunnerRecord,
        (connected, healthy): (bool, bool),
        protocol: String,
        sdks: Vec<SdkOffer>,
        (running_turns, agents): (i64, i64),
    ) -> Self {
        Self {
            protocol_pinned: runner.protocol.is_some(),
            id: runner.id,
            name: runner.name,
            connected,
            healthy,
            protocol,
            sdks,
            running_turns,
            agents,
            created_at: runner.created_at,
            registered_at: runner.registered_at,
        }
    }
}

/// An agent and its skills.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AgentView {
    pub id: String,
    pub runner_id: String,
    pub sdk: String,
    pub model: Option<String>,
    pub status: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub skills: Vec<SkillView>,
}

impl AgentView {
    /// The view of `agent` with `skills`.
    pub(crate) fn new(agent: AgentRecord, skills: Vec<SkillRecord>) -> Self {
        Self {
            id: agent.id,
            runner_id: agent.runner_id,
            sdk: agent.sdk,
            model: agent.model,
            status: agent.status,
            created_at: agent.created_at,
            updated_at: agent.updated_at,
            skills: skills.into_iter().map(SkillView::from).collect(),
        }
    }
}

/// A skill package of an agent.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SkillView {
    pub package_name: String,
    pub status: String,
    pub updated_at: i64,
}

impl From<SkillRecord> for SkillView {
    fn from(skill: SkillRecord) -> Self {
        Self {
            package_name: skill.package_name,
            status: skill.status,
            updated_at: skill.updated_at,
        }
    }
}

/// A thread, without its turns.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ThreadView {
    pub id: String,
    pub agent_id: String,
    pub runner_id: String,
    pub model: String,
    pub reasoning_level: Option<String>,
    pub status: String,
    /// Its name, as its (0.7.0) runner said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its token usage, as its (0.7.0) runner last said.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub token_usage: Option<serde_json::Value>,
    /// Its MCP servers (0.7.0), without secret values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<crate::ops::McpServerView>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A thread's token usage (`ThreadTokenUsageUpdate`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub(crate) struct UsageView {
    /// The turn of the last model call.
    pub turn_id: String,
    /// Since the thread began.
    pub total: Option<TokensView>,
    /// Of the last model call.
    pub last: Option<TokensView>,
    /// The model's context window, when known.
    pub model_context_window: Option<i64>,
}

/// Token counts.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub(crate) struct TokensView {
    pub input_tokens: i64,
    pub cached_input_tokens: i64,
    pub output_tokens: i64,
    pub reasoning_output_tokens: i64,
    pub total_tokens: i64,
}

impl From<&gantry_runner_protocol::messages::ThreadTokenUsageUpdate> for UsageView {
    fn from(u: &gantry_runner_protocol::messages::ThreadTokenUsageUpdate) -> Self {
        let tokens = |t: &gantry_runner_protocol::messages::TokenUsageBreakdown| TokensView {
            input_tokens: t.input_tokens,
            cached_input_tokens: t.cached_input_tokens,
            output_tokens: t.output_tokens,
            reasoning_output_tokens: t.reasoning_output_tokens,
            total_tokens: t.total_tokens,
        };
        Self {
            turn_id: u.sdk_turn_id.clone(),
            total: u.total_usage.as_ref().map(tokens),
            last: u.last_usage.as_ref().map(tokens),
            model_context_window: u.model_context_window,
        }
    }
}

impl From<&ThreadRecord> for ThreadView {
    fn from(thread: &ThreadRecord) -> Self {
        Self {
            id: thread.id.clone(),
            agent_id: thread.agent_id.clone(),
            runner_id: thread.runner_id.clone(),
            model: thread.model.clone(),
            reasoning_level: thread.reasoning_level.clone(),
            status: thread.status.clone(),
            name: thread.name.clone(),
            token_usage: thread
                .token_usage
                .as_deref()
                .and_then(|json| serde_json::from_str(json).ok()),
            mcp_servers: thread
                .mcp_servers
                .as_deref()
                .and_then(|json| serde_json::from_str(json).ok())
                .unwrap_or_default(),
            created_at: thread.created_at,
            updated_at: thread.updated_at,
        }
    }
}

/// A turn, without its items.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TurnView {
    pub id: String,
    /// The request that started it.
    pub request_id: String,
    /// `running`, `interrupting` (an interrupt was sent for it), then
    /// `completed`, `interrupted` (it ended after its interrupt) or
    /// `failed` (the runner answered its message with an error).
    pub status: String,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<&TurnRecord> for TurnView {
    fn from(turn: &TurnRecord) -> Self {
        Self {
            id: turn.id.clone(),
            request_id: turn.request_id.clone(),
            status: turn.status.clone(),
            created_at: turn.created_at,
            updated_at: turn.updated_at,
        }
    }
}

/// An item, latest state.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ItemView {
    pub id: String,
    pub turn_id: Option<String>,
    #[serde(rename = "type")]
    pub item_type: String,
    /// `running` or `completed`; one still running when its turn ended
    /// ended with it, in the turn's status (`interrupted`, `failed`).
    pub status: String,
    pub text: Option<String>,
    pub command: Option<CommandView>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<&ItemRecord> for ItemView {
    fn from(item: &ItemRecord) -> Self {
        Self {
            id: item.id.clone(),
            turn_id: item.turn_id.clone(),
            item_type: item.item_type.clone(),
            status: item.status.clone(),
            text: item.text.clone(),
            command: item.command.as_deref().and_then(CommandView::parse),
            created_at: item.created_at,
            updated_at: item.updated_at,
        }
    }
}

/// A command execution; also the JSON kept in the item's `command` column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub(crate) struct CommandView {
    pub command: String,
    pub cwd: String,
    pub process_id: String,
    pub output: Option<String>,
}

impl CommandView {
    /// From the stored JSON; unreadable JSON shows as no command.
    fn parse(json: &str) -> Option<Self> {
        serde_json::from_str(json)
            .inspect_err(|e| tracing::warn!(error = %e, "stored command is unreadable"))
            .ok()
    }
}

/// A refused request, in a thread's update log.
#[derive(Debug, Serialize)]
pub(crate) struct ErrorView<'a> {
    pub request_id: &'a str,
    pub error: &'a str,
}

/// A thread with its turns and their items, as `GET /v1/threads/{id}` shows it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ThreadDetail {
    #[serde(flatten)]
    pub thread: ThreadView,
    pub turns: Vec<TurnDetail>,
    /// Items whose turn is not known (their request started no turn).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unattributed_items: Vec<ItemView>,
}

/// A turn and its items.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TurnDetail {
    #[serde(flatten)]
    pub turn: TurnView,
    pub items: Vec<ItemView>,
}

impl ThreadDetail {
    /// Groups `items` under their `turns`, each in first-seen order.
    pub(crate) fn new(thread: &ThreadRecord, turns: &[TurnRecord], items: &[ItemRecord]) -> Self {
        let mut unattributed_items = Vec::new();
        let mut details: Vec<TurnDetail> = turns
            .iter()
            .map(|t| TurnDetail {
                turn: TurnView::from(t),
                items: Vec::new(),
            })
            .collect();
        for item in items {
            let turn = item
                .turn_id
                .as_deref()
                .and_then(|id| details.iter_mut().find(|d| d.turn.id == id));
            match turn {
                Some(detail) => detail.items.push(ItemView::from(item)),
                None => unattributed_items.push(ItemView::from(item)),
            }
        }
        Self {
            thread: ThreadView::from(thread),
            turns: details,
            unattributed_items,
        }
    }
}

/// The JSON of a view, for the update log. Serializing these plain structs
/// cannot fail; should it ever, the entry says so instead of being lost.
pub(crate) fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| {
        tracing::error!(error = %e, "cannot encode a thread update");
        format!(
            "{{\"encode_error\":{}}}",
            serde_json::Value::String(e.to_string())
        )
    })
}

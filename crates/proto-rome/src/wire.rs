//! The wire: what `@gantry/rome-runner` posts, and the `AgentMessage`s of
//! `@rome-os/app-runtime` streamed back, one JSON object per line. Field
//! names are Rome's (camelCase); fields Rome's newer versions add to the
//! requests are accepted and ignored.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `POST /v1/rome/run`: Rome's `RunParams`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRequest {
    /// The agent to run.
    pub agent_name: String,
    /// What the user said.
    pub prompt: String,
    /// The channel thread the session belongs to (`<channel>:<thread>`).
    #[serde(default)]
    pub channel_thread_key: Option<String>,
    /// Where the message came from (channel, thread, project).
    #[serde(default)]
    pub thread_context: Option<ThreadContext>,
    /// The session to resume.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Text appended to this turn's prompt (the host's per-turn context).
    #[serde(default)]
    pub context_suffix: Option<String>,
    /// Data the host shares with the agent for this turn.
    #[serde(default)]
    pub shared_context: Option<Map<String, Value>>,
    /// The session's workspace.
    #[serde(default)]
    pub working_dir: Option<String>,
}

/// `POST /v1/rome/fork`: Rome's `ForkRunParams`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkRequest {
    /// The agent of the source session.
    pub agent_name: String,
    /// The session forked.
    pub source_session_id: String,
    /// What the fork is asked.
    pub prompt: String,
    /// The key the source session runs under.
    pub channel_thread_key: String,
    /// Where the message came from.
    #[serde(default)]
    pub thread_context: Option<ThreadContext>,
    /// The fork's workspace.
    #[serde(default)]
    pub working_dir: Option<String>,
    /// Its tool surface (Rome 0.6 `ForkRunMode`); isolated when absent.
    #[serde(default)]
    pub mode: ForkMode,
    /// The fork's purpose (`recap`), kept on the fork's session.
    #[serde(default)]
    pub label: Option<String>,
    /// The source session's turn that triggered the fork, kept as lineage.
    #[serde(default)]
    pub parent_turn_id: Option<String>,
}

/// How a fork's session is set up relative to its source (Rome's
/// `ForkRunMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForkMode {
    /// No tools at all: the fork reads the conversation and answers.
    #[default]
    Isolated,
    /// The source session's own configuration, tools included.
    Exact,
}

/// Rome's `ThreadContext`: the parts Gantry uses.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadContext {
    /// The channel (`telegram`, `slack`, ...).
    #[serde(default)]
    pub channel: Option<String>,
    /// The channel's thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The project's directory, the workspace when `workingDir` is absent.
    #[serde(default)]
    pub project_path: Option<String>,
}

/// Rome's `AgentMessage`, as Gantry streams it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Message {
    /// The first message of a turn.
    TurnStart {
        /// The turn.
        turn_id: String,
        /// The session (a Gantry thread id).
        session_id: String,
        /// The prompt as the caller gave it.
        user_prompt: String,
    },
    /// The session as the turn sees it; not sent by forks.
    SessionInit {
        /// The session.
        session_id: String,
        /// The agent's instructions.
        #[serde(skip_serializing_if = "Option::is_none")]
        system_prompt: Option<String>,
        /// The prompt.
        user_prompt: String,
        /// The session's workspace.
        project_path: String,
        /// The turn.
        turn_id: String,
    },
    /// More of the text that follows.
    TextDelta {
        /// The added text.
        content: String,
    },
    /// A whole text block.
    Text {
        /// Its text.
        content: String,
    },
    /// The model's visible reasoning.
    Thinking {
        /// Its text.
        content: String,
    },
    /// A tool call begins.
    ToolUse {
        /// The call's id, which its result names.
        id: String,
        /// The tool's name as the model called it.
        tool: String,
        /// Its arguments (the raw text when not JSON).
        input: Value,
        /// When it started (RFC 3339).
        started_at: String,
    },
    /// A tool call's result.
    ToolResult {
        /// The call's id.
        tool_use_id: String,
        /// The tool's name.
        tool: String,
        /// What the model was told.
        output: Value,
        /// When it ended (RFC 3339).
        ended_at: String,
    },
    /// Output the agent's schema accepted.
    StructuredOutput {
        /// The payload.
        payload: Value,
    },
    /// The turn's final answer.
    Result {
        /// Its text (a structured payload's JSON).
        content: String,
        /// The structured payload, when the agent has an output schema
        /// (Rome 0.6's `result.structuredOutput`).
        #[serde(skip_serializing_if = "Option::is_none")]
        structured_output: Option<Value>,
        /// What the turn used.
        accounting: Accounting,
    },
    /// The turn failed.
    Error {
        /// Why.
        error: String,
        /// What the turn used.
        accounting: Accounting,
    },
    /// The last message of a turn.
    TurnEnd {
        /// The turn.
        turn_id: String,
        /// How it ended.
        status: EndStatus,
        /// Its wall-clock time.
        duration_ms: u64,
    },
}

/// How a turn ended, as `turn_end` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndStatus {
    /// The agent answered.
    Completed,
    /// Someone stopped it.
    Interrupted,
    /// It failed.
    Error,
}

/// Rome's `AgentAccounting`, from the engine's usage of the turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Accounting {
    /// The provider (the model id's part before `/`).
    pub provider: String,
    /// The model.
    pub model: String,
    /// Tokens.
    pub usage: TokenUsage,
    /// What the tokens cost, from the model catalog (0 when unknown).
    pub cost_usd: f64,
    /// Model requests the turn made.
    pub num_turns: u32,
}

/// Rome's `AgentTokenUsage`. Input tokens exclude cached and cache-written
/// ones, which are counted apart (Anthropic's convention, which Rome's
/// own runners report).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Prompt tokens neither read from nor written to the cache.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the cache.
    pub cache_write_tokens: u64,
}

impl From<&gantry_types::Usage> for TokenUsage {
    fn from(u: &gantry_types::Usage) -> Self {
        TokenUsage {
            input_tokens: u
                .input_tokens
                .saturating_sub(u.cached_input_tokens)
                .saturating_sub(u.cache_write_tokens),
            output_tokens: u.output_tokens,
            cache_read_tokens: u.cached_input_tokens,
            cache_write_tokens: u.cache_write_tokens,
        }
    }
}

/// An error answered instead of a stream: `{"error": "..."}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What was wrong.
    pub error: String,
}

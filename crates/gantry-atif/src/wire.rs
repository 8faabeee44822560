//! ATIF's JSON shape, field for field as Harbor's pydantic models
//! (`harbor.models.trajectories`, ATIF-v1.8) define it: optional fields are
//! left out when unknown, since Harbor forbids extra fields and reads a
//! missing one as "not tracked".

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The ATIF version written: the newest Harbor 0.26 validates.
pub const SCHEMA_VERSION: &str = "ATIF-v1.8";

/// A whole run: who ran it and every step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// `ATIF-v1.8`.
    pub schema_version: String,
    /// The run's id (a Gantry thread id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The agent system and its model.
    pub agent: Agent,
    /// The steps, `step_id` 1, 2, ... in order (at least one).
    pub steps: Vec<Step>,
    /// Free-form notes on how the trajectory was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// Totals over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_metrics: Option<FinalMetrics>,
    /// Gantry's own root-level details (workspace, turns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// The agent system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    /// `gantry`.
    pub name: String,
    /// Gantry's version.
    pub version: String,
    /// The thread's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The tools offered, in OpenAI's function calling shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_definitions: Option<Vec<Value>>,
}

/// Who a step comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The engine itself (an error, a compaction).
    System,
    /// The user's input.
    User,
    /// One model response and the tool calls it made.
    Agent,
}

/// One step of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// 1-based position in `steps`.
    pub step_id: u64,
    /// When it started, ISO 8601.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Who it comes from.
    pub source: Source,
    /// The model of the step, when it is not the agent's (agent steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The text said (empty for a step of tool calls only).
    pub message: String,
    /// The model's visible reasoning (agent steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// The tool calls made (agent steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// What the tool calls gave back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
    /// Tokens and cost of the step's model response (agent steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// How many model responses the step stands for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_call_count: Option<u64>,
    /// Gantry's own step details (round, duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id.
    pub tool_call_id: String,
    /// The tool's name.
    pub function_name: String,
    /// Its arguments (an object; arguments that were not one are kept
    /// under `raw`).
    pub arguments: Map<String, Value>,
}

/// The results of a step's tool calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// One per tool call that gave something back.
    pub results: Vec<ObservationResult>,
}

/// One tool call's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservationResult {
    /// The `tool_call_id` it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_call_id: Option<String>,
    /// What the model was told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Gantry's details: exit code, duration, status, refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// One step's model usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Prompt tokens, cached ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens, reasoning ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Prompt tokens served from cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// What the step cost, when the model's price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Reasoning and cache-write tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// Totals over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FinalMetrics {
    /// Prompt tokens, cached ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_prompt_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_completion_tokens: Option<u64>,
    /// Prompt tokens served from cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cached_tokens: Option<u64>,
    /// What the run cost in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    /// `steps.len()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_steps: Option<u64>,
    /// Reasoning and cache-write tokens, wall time, turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

//! What the API answers and takes: its own types (the OpenAPI document is
//! generated from them), built from the engine's. Nested engine data that
//! is the engine's own vocabulary (items, policies, job actions) goes as
//! its JSON, an object in the document.

mod checkpoints;
mod structured;
mod trajectory;
mod user_input;

pub use checkpoints::{CheckpointList, CheckpointView, NotKeptView, RewindAnswer, RewindRequest};
pub use structured::{StructuredAnswer, StructuredAsk};
pub use trajectory::TrajectoryView;
pub(crate) use user_input::pending_user_input;
pub use user_input::{AnswerView, OptionView, QuestionView, UserInputAnswers, UserInputView};

use gantry_core::projection;
use gantry_types::{Thread, ThreadStatus, ThreadView, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// A thread in lists.
#[derive(Debug, Serialize, ToSchema)]
pub struct ThreadSummary {
    /// Its id.
    pub id: String,
    /// Its name, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The workspace directory.
    pub workspace: String,
    /// The model id.
    pub model: String,
    /// The agent it was made from, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// `idle`, `running` or `failed`.
    pub status: String,
    /// No model or tool call starts until resumed.
    pub paused: bool,
    /// Archived threads are hidden from the default list.
    pub archived: bool,
    /// The start of its first message.
    pub preview: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds of the last change.
    pub updated_at: i64,
    /// Tokens used in total.
    pub usage: UsageView,
    /// What it cost, in US dollars (0 when the model's price is unknown).
    pub cost_usd: f64,
    /// The seq of its last event.
    pub last_seq: u64,
}

impl From<&Thread> for ThreadSummary {
    fn from(t: &Thread) -> Self {
        Self {
            id: t.id.0.clone(),
            name: t.name.clone(),
            workspace: t.cwd.clone(),
            model: t.model.clone(),
            agent: t.agent_id.as_ref().map(|a| a.0.clone()),
            status: status_name(t.status).to_owned(),
            paused: t.paused,
            archived: t.archived,
            preview: t.preview.clone(),
            created_at: t.created_at,
            updated_at: t.updated_at,
            usage: UsageView::from(&t.usage),
            cost_usd: t.cost_usd,
            last_seq: t.last_seq,
        }
    }
}

fn status_name(status: ThreadStatus) -> &'static str {
    match status {
        ThreadStatus::Idle => "idle",
        ThreadStatus::Running => "running",
        ThreadStatus::Failed => "failed",
    }
}

/// Token counts.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct UsageView {
    /// Prompt tokens (cached ones included).
    pub input_tokens: u64,
    /// Completion tokens (reasoning included).
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_input_tokens: u64,
    /// Completion tokens spent on reasoning.
    pub reasoning_tokens: u64,
}

impl From<&Usage> for UsageView {
    fn from(u: &Usage) -> Self {
        Self {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_input_tokens: u.cached_input_tokens,
            reasoning_tokens: u.reasoning_tokens,
        }
    }
}

/// A page of threads.
#[derive(Debug, Serialize, ToSchema)]
pub struct ThreadList {
    /// Newest first.
    pub threads: Vec<ThreadSummary>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A thread with its history.
#[derive(Debug, Serialize, ToSchema)]
pub struct ThreadDetail {
    /// The thread.
    pub thread: ThreadSummary,
    /// Its turns, oldest first, each with its items (the engine's turn and
    /// item JSON).
    #[schema(value_type = Vec<Object>)]
    pub turns: Vec<Value>,
    /// Messages waiting for the running turn to end.
    #[schema(value_type = Vec<Object>)]
    pub queued: Vec<Value>,
    /// Approvals waiting for an answer.
    pub pending_approvals: Vec<ApprovalView>,
    /// Questions the model asked the user, waiting for an answer.
    pub pending_user_input: Vec<UserInputView>,
}

impl From<&ThreadView> for ThreadDetail {
    fn from(view: &ThreadView) -> Self {
        Self {
            thread: ThreadSummary::from(&view.thread),
            turns: view.turns.iter().map(to_json).collect(),
            queued: view.queued.iter().map(to_json).collect(),
            pending_approvals: pending_approvals(view),
            pending_user_input: pending_user_input(view),
        }
    }
}

/// `value` as JSON (engine types always serialize).
pub(crate) fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// `POST /v1/threads`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewThread {
    /// An existing directory [default: the server's workspace].
    #[serde(default)]
    pub workspace: Option<String>,
    /// Model id [default: the agent's, else the server's default].
    #[serde(default)]
    pub model: Option<String>,
    /// Make it from this agent (model, instructions, skills).
    #[serde(default)]
    pub agent: Option<String>,
    /// The thread policy (the engine's `ThreadPolicy` JSON; its
    /// `user_input.offer` is `auto` unless given).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub policy: Option<Value>,
    /// A name to show.
    #[serde(default)]
    pub name: Option<String>,
    /// System instructions.
    #[serde(default)]
    pub instructions: Option<String>,
}

/// `POST /v1/threads/{id}/fork`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkRequest {
    /// The last turn the fork keeps [default: the last ended turn].
    #[serde(default)]
    pub up_to_turn: Option<String>,
    /// Fork at this checkpoint instead: a new workspace directory beside
    /// the source's with the checkpoint's files, and the turns before the
    /// checkpoint's (not with `up_to_turn`).
    #[serde(default)]
    pub checkpoint: Option<String>,
}

/// What to do with a message sent while a turn runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IfBusy {
    /// Refuse with 409.
    #[default]
    Reject,
    /// Inject it into the running turn.
    Steer,
    /// Run it as the next turn.
    Queue,
}

/// `POST /v1/threads/{id}/messages`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    /// What to say (may be empty when images come with it).
    pub text: String,
    /// Images for the model: `image/png`, `image/jpeg`, `image/gif` or
    /// `image/webp`, base64, at most 8 of at most 5 MiB each; refused (422)
    /// for a model the catalog says reads no images.
    #[serde(default)]
    pub images: Vec<NewImage>,
    /// While a turn runs: `reject` (409, the default), `steer` or `queue`.
    #[serde(default)]
    pub if_busy: IfBusy,
}

/// An image of a [`NewMessage`].
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewImage {
    /// Its media type (`image/png`).
    pub media_type: String,
    /// Its bytes, standard base64.
    pub data: String,
}

/// What became of a message.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageAccepted {
    /// The turn it started, steered or was queued for.
    pub turn_id: String,
    /// With `?wait=true`: the turn once it ended (the engine's turn JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub turn: Option<Value>,
}

/// `POST /v1/threads/{id}/interrupt`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Interrupted {
    /// The turn interrupted; absent when none was running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// An approval a thread asked for.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalView {
    /// The thread.
    pub thread_id: String,
    /// The id to answer it with.
    pub approval_id: String,
    /// What was asked (tool, arguments, reason; the engine's JSON).
    #[schema(value_type = Object)]
    pub request: Value,
    /// `pending`, or `answered`.
    pub state: String,
}

/// The approvals of `view` still waiting.
pub(crate) fn pending_approvals(view: &ThreadView) -> Vec<ApprovalView> {
    projection::approvals(view)
        .filter(|a| a.answer.is_none())
        .map(|a| ApprovalView {
            thread_id: view.thread.id.0.clone(),
            approval_id: a.approval_id.to_owned(),
            request: to_json(a.request),
            state: "pending".to_owned(),
        })
        .collect()
}

/// `POST /v1/threads/{id}/approvals/{approval_id}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalAnswer {
    /// `approve`, `approve_for_session`, `deny` or `abort`.
    pub decision: DecisionName,
    /// With `deny`: why, given back to the model.
    #[serde(default)]
    pub reason: Option<String>,
}

/// An approval's answer.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionName {
    /// Run this call.
    Approve,
    /// Run it and identical ones for the rest of the session.
    ApproveForSession,
    /// Do not run it.
    Deny,
    /// Do not run it and end the turn.
    Abort,
}

/// An external task a turn waits on.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExternalTaskView {
    /// The id to complete it with.
    pub task_id: String,
    /// The engine's task JSON (lane, tool, arguments).
    #[schema(value_type = Object)]
    pub task: Value,
}

/// `POST /v1/threads/{id}/tasks/{task_id}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskResult {
    /// The output, when it succeeded.
    #[serde(default)]
    pub output: Option<String>,
    /// Why it failed (given instead of `output`).
    #[serde(default)]
    pub error: Option<String>,
}

/// `PUT /v1/threads/{id}/todos`: the whole list.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoList {
    /// Each `{id, content, status?, priority?}`.
    #[schema(value_type = Vec<Object>)]
    pub todos: Vec<Value>,
}

/// `PUT /v1/threads/{id}/goal`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalRequest {
    /// What the thread works towards.
    pub objective: String,
    /// Tokens the goal may spend.
    #[serde(default)]
    pub token_budget: Option<u64>,
}

/// A thread's goal (absent: none).
#[derive(Debug, Serialize, ToSchema)]
pub struct GoalView {
    /// The engine's goal JSON, or null.
    #[schema(value_type = Option<Object>)]
    pub goal: Option<Value>,
}

/// Usage and cost.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageReport {
    /// Tokens.
    pub usage: UsageView,
    /// US dollars.
    pub cost_usd: f64,
    /// Threads counted (1 for a thread's own report).
    pub threads: u64,
}

/// A list of the engine's objects (agents, providers, models, jobs, runs,
/// MCP servers) as their JSON.
#[derive(Debug, Serialize, ToSchema)]
pub struct Objects {
    /// The objects.
    #[schema(value_type = Vec<Object>)]
    pub items: Vec<Value>,
}

/// One of the engine's objects as its JSON.
#[derive(Debug, Serialize, ToSchema)]
#[schema(value_type = Object)]
#[serde(transparent)]
pub struct Object(pub Value);

/// `GET /healthz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
    /// The API version, `v1`.
    pub api: String,
}

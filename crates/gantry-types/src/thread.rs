//! Threads: a conversation with an agent in one workspace.

use serde::{Deserialize, Serialize};

use crate::{LaneHandler, ThreadGoal, ThreadId, ThreadPolicy, TodoItem, TurnId, Usage};

/// What a thread is doing right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// No turn is running.
    Idle,
    /// A turn is running.
    Running,
    /// Work is paused and resumes on request.
    Paused,
    /// The last turn failed.
    Failed,
}

/// Where a forked thread came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkOrigin {
    /// The thread that was forked.
    pub thread_id: ThreadId,
    /// The last turn of the source thread that the fork contains.
    pub turn_id: TurnId,
}

/// A user input waiting for the running turn to finish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedInput {
    /// Becomes the id of the turn the input starts.
    pub turn_id: TurnId,
    /// The user's text.
    pub text: String,
}

/// A thread's metadata (its turns and items live in [`crate::ThreadView`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    /// UUIDv7 id.
    pub id: ThreadId,
    /// Optional human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Absolute path of the workspace the agent works in.
    pub cwd: String,
    /// Model the thread talks to.
    pub model: String,
    /// Extra instructions given to the model on every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Running, idle, ...
    pub status: ThreadStatus,
    /// Archived threads are hidden from default listings and accept no input.
    #[serde(default)]
    pub archived: bool,
    /// The start of the first user message, for listings.
    #[serde(default)]
    pub preview: String,
    /// Creation time, unix milliseconds.
    pub created_at: i64,
    /// Last change, unix milliseconds.
    pub updated_at: i64,
    /// Set when the thread was forked from another one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkOrigin>,
    /// Tokens used by all turns so far.
    #[serde(default)]
    pub usage: Usage,
    /// What those tokens cost in USD, from the model catalog.
    #[serde(default)]
    pub cost_usd: f64,
    /// Paused: no model or tool call starts until resumed.
    #[serde(default)]
    pub paused: bool,
    /// The agent's task list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<TodoItem>,
    /// What the thread's tool calls may do.
    #[serde(default)]
    pub policy: ThreadPolicy,
    /// Lanes not handled by the engine alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lane_handlers: Vec<LaneHandler>,
    /// What the thread works toward, with its token budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<ThreadGoal>,
    /// Seq of the last event applied.
    #[serde(default)]
    pub last_seq: u64,
}

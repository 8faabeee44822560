//! Threads on the wire: `ThreadRequest` (tagged by `kind`), its parameters,
//! `ThreadResponse`, and the `Thread` and `ThreadGoal` they carry. Field
//! names, tags and `skip_serializing_if` as in `codewhale_protocol` 0.8.59;
//! where Gantry reads more than the seed's type (a start's approval policy
//! and sandbox, a message's `if_busy`), the extra field is optional and
//! left out when absent, so the seed's JSON round-trips unchanged.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::EventFrame;

/// What a thread is doing.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// A turn runs.
    Running,
    /// Nothing runs.
    Idle,
    /// Finished for good (Gantry never says this: a thread can always go on).
    Completed,
    /// The last turn failed.
    Failed,
    /// Paused: no model or tool call starts.
    Paused,
    /// Archived.
    Archived,
}

/// Where a thread came from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SessionSource {
    /// Started by a client.
    Interactive,
    /// Resumed.
    Resume,
    /// Forked from another thread.
    Fork,
    /// Started over an API.
    Api,
    /// Not known.
    Unknown,
}

/// A thread as CodeWhale shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Thread {
    /// Its id.
    pub id: String,
    /// The start of its first user message.
    pub preview: String,
    /// Whether it is kept only in memory.
    pub ephemeral: bool,
    /// The provider serving its model.
    pub model_provider: String,
    /// Creation time, unix seconds.
    pub created_at: i64,
    /// Last change, unix seconds.
    pub updated_at: i64,
    /// What it is doing.
    pub status: ThreadStatus,
    /// A rollout file (Gantry has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Its workspace.
    pub cwd: PathBuf,
    /// The server's version.
    pub cli_version: String,
    /// Where it came from.
    pub source: SessionSource,
    /// Its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Where a thread goal is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ThreadGoalStatus {
    /// Pursued.
    Active,
    /// Set aside.
    Paused,
    /// Needs outside help.
    Blocked,
    /// Stopped by a provider's usage limit.
    UsageLimited,
    /// Its token budget is used up.
    BudgetLimited,
    /// Achieved.
    Complete,
}

/// A thread goal with its token budget.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ThreadGoal {
    /// The thread.
    pub thread_id: String,
    /// The goal's id.
    pub goal_id: String,
    /// What the thread works toward.
    pub objective: String,
    /// Where it is.
    pub status: ThreadGoalStatus,
    /// Most tokens its turns may use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<i64>,
    /// Tokens used so far.
    pub tokens_used: i64,
    /// Wall time of its turns, seconds.
    pub time_used_seconds: i64,
    /// 0.10: turns that went on toward it unasked (0.10 requires it; the
    /// seed has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation_count: Option<i64>,
    /// When it was set, unix seconds.
    pub created_at: i64,
    /// Last change, unix seconds.
    pub updated_at: i64,
    /// 0.10: the same gap seen again in a row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeated_gap_count: Option<u32>,
}

/// `start`: a new thread.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ThreadStartParams {
    /// 0.10: the client's key for this intent; a retry with it gets the
    /// same thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_key: Option<String>,
    /// Its model; the server's default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider of the model (`PROVIDER/MODEL` is asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// Its workspace; the server's when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Kept for the seed's shape; Gantry stores every thread's whole log.
    #[serde(default)]
    pub persist_extended_history: bool,
    /// Gantry: when to ask before acting (an `AskForApproval` name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<String>,
    /// Gantry: the sandbox of its commands (`read-only`, `workspace-write`,
    /// `danger-full-access`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
}

/// `resume`: go on with a thread.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadResumeParams {
    /// 0.10: the client's key for this intent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_key: Option<String>,
    /// The thread.
    pub thread_id: String,
    /// History to append (not supported: Gantry's log is the history).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Value>>,
    /// A rollout file (ignored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// A new model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The new model's provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// A workspace (a thread keeps its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// A new approval policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<String>,
    /// A new sandbox.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Extra configuration (ignored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// Base instructions (ignored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_instructions: Option<String>,
    /// Instructions for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub developer_instructions: Option<String>,
    /// A personality (ignored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub personality: Option<String>,
    /// Kept for the seed's shape.
    #[serde(default)]
    pub persist_extended_history: bool,
}

/// `fork`: a new thread with another's history.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadForkParams {
    /// 0.10: the client's key for this intent; a retry with it gets the
    /// same fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_key: Option<String>,
    /// The thread forked.
    pub thread_id: String,
    /// A rollout file (ignored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// The fork's model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The fork's provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// A workspace (a fork keeps its source's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The fork's approval policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<String>,
    /// The fork's sandbox.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Extra configuration (ignored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// Base instructions (ignored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_instructions: Option<String>,
    /// Instructions for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub developer_instructions: Option<String>,
    /// Kept for the seed's shape.
    #[serde(default)]
    pub persist_extended_history: bool,
}

/// `list`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ThreadListParams {
    /// Archived threads too.
    #[serde(default)]
    pub include_archived: bool,
    /// At most this many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// `read`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadReadParams {
    /// The thread.
    pub thread_id: String,
}

/// `set_name`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadSetNameParams {
    /// The thread.
    pub thread_id: String,
    /// Its new name.
    pub name: String,
}

/// `goal_set`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadGoalSetParams {
    /// The thread.
    pub thread_id: String,
    /// What it works toward.
    pub objective: String,
    /// Most tokens its turns may use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<i64>,
}

/// `goal_get` and `goal_clear`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadGoalGetParams {
    /// The thread.
    pub thread_id: String,
}

/// `goal_clear`.
pub type ThreadGoalClearParams = ThreadGoalGetParams;

/// What a user message does while a turn runs (Gantry: the seed's
/// `message` carries no such field; without it the message is queued).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IfBusy {
    /// Into the running turn, seen before the model's next request.
    Steer,
    /// The next turn.
    Queue,
}

/// A request about threads, tagged by `kind`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ThreadRequest {
    /// A new thread with the server's defaults.
    Create {
        /// What the client keeps with it (string values are stored).
        #[serde(default)]
        metadata: Value,
    },
    /// A new thread.
    Start(ThreadStartParams),
    /// Go on with a thread.
    Resume(ThreadResumeParams),
    /// A new thread with another's history.
    Fork(ThreadForkParams),
    /// Threads, newest first.
    List(ThreadListParams),
    /// One thread.
    Read(ThreadReadParams),
    /// Names a thread.
    SetName(ThreadSetNameParams),
    /// Sets the goal.
    GoalSet(ThreadGoalSetParams),
    /// The goal.
    GoalGet(ThreadGoalGetParams),
    /// Removes the goal.
    GoalClear(ThreadGoalClearParams),
    /// Archives a thread.
    Archive {
        /// The thread.
        thread_id: String,
    },
    /// Unarchives a thread.
    Unarchive {
        /// The thread.
        thread_id: String,
    },
    /// A user message: starts a turn (or steers or queues).
    Message {
        /// The thread.
        thread_id: String,
        /// What the user says.
        input: String,
        /// Gantry: what to do while a turn runs (queue when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        if_busy: Option<IfBusy>,
    },
}

/// The answer to a [`ThreadRequest`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadResponse {
    /// The thread (`list` for listings).
    pub thread_id: String,
    /// `created`, `started`, `resumed`, `forked`, `ok`, `missing`,
    /// `cleared`, `empty`, `archived`, `unarchived`, `accepted` (and
    /// `error` when the request could not be done).
    pub status: String,
    /// The thread, when one is answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<Thread>,
    /// Listed threads.
    #[serde(default)]
    pub threads: Vec<Thread>,
    /// The goal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal: Option<ThreadGoal>,
    /// The thread's model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Its provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// Its workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Its approval policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<String>,
    /// Its sandbox.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Frames of what the request did.
    #[serde(default)]
    pub events: Vec<EventFrame>,
    /// More about the answer.
    #[serde(default)]
    pub data: Value,
}

impl ThreadResponse {
    /// An answer with `status` about `thread_id` and nothing else.
    pub fn bare(thread_id: impl Into<String>, status: &str) -> Self {
        Self {
            thread_id: thread_id.into(),
            status: status.to_owned(),
            thread: None,
            threads: Vec::new(),
            goal: None,
            model: None,
            model_provider: None,
            cwd: None,
            approval_policy: None,
            sandbox: None,
            events: Vec::new(),
            data: Value::Object(Default::default()),
        }
    }

    /// `missing`: the thread is not there.
    pub fn missing(thread_id: impl Into<String>) -> Self {
        let mut response = Self::bare(thread_id, "missing");
        response.data = serde_json::json!({ "error": "thread not found" });
        response
    }
}

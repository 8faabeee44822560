//! The rows of the control plane's tables. Statuses and kinds are plain
//! strings: the control plane owns their vocabulary, the store only keeps it.

/// A runner allowed to connect.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RunnerRecord {
    /// Runner id (UUIDv7).
    pub id: String,
    /// Unique name given when the runner was added.
    pub name: String,
    /// Hex SHA-256 of the runner's token; the token itself is never stored.
    pub token_hash: String,
    /// JSON of what the runner offered at its last registration (`[]` before).
    pub sdks: String,
    /// When the runner was added (ms since the epoch).
    pub created_at: i64,
    /// When the runner last registered (ms since the epoch).
    pub registered_at: Option<i64>,
    /// The protocol version it was pinned to (`0.2`, `0.7`); `None`: the
    /// version is detected at each registration.
    pub protocol: Option<String>,
}

/// A bearer token of the HTTP API (a user's, not a runner's).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ApiTokenRecord {
    /// Token id (UUIDv7).
    pub id: String,
    /// Unique name given when the token was created.
    pub name: String,
    /// Hex SHA-256 of the token; the token itself is never stored.
    pub token_hash: String,
    /// When the token was created (ms since the epoch).
    pub created_at: i64,
    /// It may only read: `GET` and `HEAD`.
    pub read_only: bool,
}

/// Per-runner load, for choosing where new agents go.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RunnerLoad {
    /// Runner id.
    pub runner_id: String,
    /// Turns of the runner's threads whose status is `running`.
    pub running_turns: i64,
    /// The runner's agents that are not deleted.
    pub agents: i64,
}

/// An agent on a runner.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AgentRecord {
    /// Agent id.
    pub id: String,
    /// The runner the agent lives on.
    pub runner_id: String,
    /// The SDK (engine) the runner runs it with.
    pub sdk: String,
    /// Default model of the agent's threads.
    pub model: Option<String>,
    /// Status (e.g. `ready`, `deleted`).
    pub status: String,
    /// Created (ms since the epoch).
    pub created_at: i64,
    /// Last changed (ms since the epoch).
    pub updated_at: i64,
}

/// A skill package installed into an agent.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SkillRecord {
    /// Agent id.
    pub agent_id: String,
    /// Package coordinate.
    pub package_name: String,
    /// Status (e.g. `installed`).
    pub status: String,
    /// Last changed (ms since the epoch).
    pub updated_at: i64,
}

/// A thread of an agent.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ThreadRecord {
    /// Thread id, as chosen by the runner.
    pub id: String,
    /// The agent it belongs to.
    pub agent_id: String,
    /// The runner it lives on.
    pub runner_id: String,
    /// Model of the thread.
    pub model: String,
    /// Reasoning level, when one was asked for.
    pub reasoning_level: Option<String>,
    /// Status (e.g. `ready`, `deleted`).
    pub status: String,
    /// Created (ms since the epoch).
    pub created_at: i64,
    /// Last changed (ms since the epoch).
    pub updated_at: i64,
    /// Its name, as its (0.7.0) runner last said.
    pub name: Option<String>,
    /// JSON of its token usage, as its (0.7.0) runner last said.
    pub token_usage: Option<String>,
    /// JSON of its MCP servers (0.7.0), without secret values.
    pub mcp_servers: Option<String>,
}

/// A request sent to a runner: what its answers are attributed to.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RequestRecord {
    /// Request id (UUIDv7), echoed by the runner.
    pub id: String,
    /// The runner it was sent to.
    pub runner_id: String,
    /// What was asked (e.g. `create_thread`).
    pub kind: String,
    /// The agent it concerns.
    pub agent_id: Option<String>,
    /// The thread it concerns, once known.
    pub thread_id: Option<String>,
    /// The turn it started or steered, once known.
    pub turn_id: Option<String>,
    /// JSON of what recording its answer needs.
    pub params: String,
    /// Sent (ms since the epoch).
    pub created_at: i64,
}

/// A turn, latest state.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TurnRecord {
    /// Thread id.
    pub thread_id: String,
    /// The runner's turn id.
    pub id: String,
    /// The request that started the turn.
    pub request_id: String,
    /// Status (e.g. `running`, `completed`).
    pub status: String,
    /// Seq of the update that first recorded the turn (set by the store).
    pub first_seq: i64,
    /// Created (ms since the epoch).
    pub created_at: i64,
    /// Last changed (ms since the epoch).
    pub updated_at: i64,
}

/// An item, latest state.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ItemRecord {
    /// Thread id.
    pub thread_id: String,
    /// The runner's item id.
    pub id: String,
    /// The turn it belongs to, when known.
    pub turn_id: Option<String>,
    /// Type (e.g. `agent_message`).
    pub item_type: String,
    /// Status (e.g. `running`, `completed`).
    pub status: String,
    /// Text, for messages and reasoning.
    pub text: Option<String>,
    /// JSON of a command execution.
    pub command: Option<String>,
    /// Seq of the update that first recorded the item (set by the store).
    pub first_seq: i64,
    /// Created (ms since the epoch).
    pub created_at: i64,
    /// Last changed (ms since the epoch).
    pub updated_at: i64,
}

/// One entry of a thread's update log.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ThreadUpdateRecord {
    /// Thread id.
    pub thread_id: String,
    /// Dense per thread, from 1.
    pub seq: i64,
    /// When it was applied (ms since the epoch).
    pub ts: i64,
    /// What changed (e.g. `turn`).
    pub kind: String,
    /// JSON of the update.
    pub data: String,
}

/// The row a thread change writes along with its log entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upsert {
    /// The thread itself.
    Thread(ThreadRecord),
    /// One of its turns.
    Turn(TurnRecord),
    /// One of its items.
    Item(ItemRecord),
    /// Nothing but the log entry (e.g. a refused request).
    Nothing,
}

/// A change to one thread: a row upserted and a log entry appended, in one
/// transaction, so the log and the state never disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadChange {
    /// Thread id.
    pub thread_id: String,
    /// When it was applied (ms since the epoch).
    pub ts: i64,
    /// The row to write.
    pub upsert: Upsert,
    /// The log entry's kind.
    pub kind: String,
    /// The log entry's JSON.
    pub data: String,
}

/// One write of a batch ([`crate::store::ControlPlaneStore::write`]): a
/// runner's queued updates and the requests sent meanwhile, written in one
/// transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// Records a request ([`crate::store::ControlPlaneStore::put_request`]),
    /// or fills in its thread and turn where they are still unknown.
    Request(RequestRecord),
    /// Inserts or updates an agent.
    Agent(AgentRecord),
    /// Inserts or updates a skill of an agent.
    Skill(SkillRecord),
    /// A thread change with the seq its writer assigned: the next of the
    /// thread's log, which the store refuses to write twice.
    Change {
        /// The log entry's seq.
        seq: i64,
        /// The change.
        change: ThreadChange,
    },
}

//! The control plane's store: runners and their tokens' hashes, agents,
//! threads, the requests sent to runners, turns, items, and each thread's
//! update log, each entry also in the order of every thread's (`log.rs`).
//! (Which replica holds a runner is in NATS KV: see
//! `nats/`.) It lives in a database of its own, apart from the engine's: a SQLite file
//! (`control-plane.db`, migrations in `migrations/` of this crate) by
//! default, or PostgreSQL (`migrations-postgres/`), which replicas share.
//! Both run the statements of `sql.rs` through the code of `shared.rs`.

mod group;
mod log;
mod records;
#[macro_use]
mod shared;
mod postgres;
mod sql;
mod sqlite;
mod token_stamp;

use async_trait::async_trait;

/// `url` without its password, fit for errors and logs.
pub use gantry_postgres::redacted;
pub use log::{LogCursor, LogPage, LoggedUpdate};
pub use postgres::PostgresControlPlaneStore;
pub use records::{
    AgentRecord, ApiTokenRecord, ItemRecord, RequestRecord, RunnerLoad, RunnerRecord, SkillRecord,
    ThreadChange, ThreadRecord, ThreadUpdateRecord, TurnRecord, Upsert, Write,
};
pub use sqlite::{CONTROL_PLANE_DB, SqliteControlPlaneStore};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed.
    #[error("store: {0}")]
    Database(String),
}

/// Where the control plane keeps its state.
#[async_trait]
pub trait ControlPlaneStore: Send + Sync {
    /// Adds a runner; its name and token hash must be new.
    async fn add_runner(&self, runner: &RunnerRecord) -> Result<(), StoreError>;

    /// Every runner, oldest first.
    async fn runners(&self) -> Result<Vec<RunnerRecord>, StoreError>;

    /// The runner named `name`.
    async fn runner_by_name(&self, name: &str) -> Result<Option<RunnerRecord>, StoreError>;

    /// Records what a runner offered when it registered, and when.
    async fn set_runner_sdks(&self, id: &str, sdks: &str, at: i64) -> Result<(), StoreError>;

    /// Adds an HTTP API token; its name and hash must be new.
    async fn add_api_token(&self, token: &ApiTokenRecord) -> Result<(), StoreError>;

    /// Every HTTP API token, oldest first.
    async fn api_tokens(&self) -> Result<Vec<ApiTokenRecord>, StoreError>;

    /// Deletes the HTTP API token named `name`; whether there was one.
    async fn revoke_api_token(&self, name: &str) -> Result<bool, StoreError>;

    /// The secret replicas sharing this store sign their messages with:
    /// `candidate` if none is kept yet (the first caller's wins).
    async fn cluster_secret(&self, candidate: &str) -> Result<String, StoreError>;

    /// Running turns and live agents of every runner.
    async fn runner_loads(&self) -> Result<Vec<RunnerLoad>, StoreError>;

    /// Inserts or updates an agent.
    async fn put_agent(&self, agent: &AgentRecord) -> Result<(), StoreError>;

    /// The agent with `id`.
    async fn agent(&self, id: &str) -> Result<Option<AgentRecord>, StoreError>;

    /// Every agent, oldest first.
    async fn agents(&self) -> Result<Vec<AgentRecord>, StoreError>;

    /// Inserts or updates a skill of an agent.
    async fn put_skill(&self, skill: &SkillRecord) -> Result<(), StoreError>;

    /// An agent's skills, by name.
    async fn skills(&self, agent_id: &str) -> Result<Vec<SkillRecord>, StoreError>;

    /// Records a request before it is sent; one recorded already only gains
    /// the thread and turn it did not know yet.
    async fn put_request(&self, request: &RequestRecord) -> Result<(), StoreError>;

    /// The request with `id`.
    async fn request(&self, id: &str) -> Result<Option<RequestRecord>, StoreError>;

    /// The thread with `id`.
    async fn thread(&self, id: &str) -> Result<Option<ThreadRecord>, StoreError>;

    /// An agent's threads, oldest first.
    async fn threads_of_agent(&self, agent_id: &str) -> Result<Vec<ThreadRecord>, StoreError>;

    /// A thread's turns, in the order they were first seen.
    async fn turns(&self, thread_id: &str) -> Result<Vec<TurnRecord>, StoreError>;

    /// Up to `limit` of a thread's turn ids, in no order.
    async fn turn_ids(&self, thread_id: &str, limit: usize) -> Result<Vec<String>, StoreError>;

    /// One turn of a thread.
    async fn turn(&self, thread_id: &str, id: &str) -> Result<Option<TurnRecord>, StoreError>;

    /// A thread's items, in the order they were first seen.
    async fn items(&self, thread_id: &str) -> Result<Vec<ItemRecord>, StoreError>;

    /// One item of a thread.
    async fn item(&self, thread_id: &str, id: &str) -> Result<Option<ItemRecord>, StoreError>;

    /// Writes `change` and appends its log entry with the thread's next seq,
    /// atomically; returns the entry.
    async fn apply(&self, change: &ThreadChange) -> Result<ThreadUpdateRecord, StoreError>;

    /// Writes `batch` in order, in one transaction (all or nothing);
    /// returns the log entries of its thread changes, in order.
    async fn write(&self, batch: &[Write]) -> Result<Vec<ThreadUpdateRecord>, StoreError>;

    /// Answers when the database does (readiness).
    async fn ping(&self) -> Result<(), StoreError>;

    /// The last seq of a thread's log (0 when it has none).
    async fn last_seq(&self, thread_id: &str) -> Result<i64, StoreError>;

    /// Up to `limit` entries of a thread's log with `seq > after`, in order.
    async fn thread_updates(
        &self,
        thread_id: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<ThreadUpdateRecord>, StoreError>;

    /// Where every thread's log ends now: following from here gets what is
    /// committed from now on.
    async fn log_head(&self) -> Result<LogCursor, StoreError>;

    /// Up to `limit` entries of every thread's log after `after`, in commit
    /// order (see [`LogCursor`]).
    async fn log_after(&self, after: LogCursor, limit: i64) -> Result<LogPage, StoreError>;

    /// Closes every connection, waiting for them to finish.
    async fn close(&self);
}

//! The statements of the control plane's store. Portable on purpose (`$n`
//! placeholders, BIGINT, TEXT, `ON CONFLICT ... DO UPDATE`): a PostgreSQL
//! store runs the same text.

/// Binds in one statement at most: far below every backend's limit
/// (SQLite's 32,766, PostgreSQL's 65,535), so a statement stays small.
const MAX_BINDS: usize = 4_000;

/// A write of many rows of one table: `insert`, then `VALUES` with
/// `columns` binds per row, then `conflict` (how a row already there
/// changes). One statement writes many rows: per statement, not per row,
/// is where a write's cost lies (a round trip to the database's thread or
/// server).
pub(super) struct Rows {
    /// `INSERT INTO table (columns) `.
    pub insert: &'static str,
    /// Binds per row.
    pub columns: usize,
    /// ` ON CONFLICT ...`, or nothing.
    pub conflict: &'static str,
}

impl Rows {
    /// Rows in one statement at most.
    pub(super) const fn per_statement(&self) -> usize {
        MAX_BINDS / self.columns
    }
}

/// Columns of a runner row, in [`crate::store::RunnerRecord`] order.
macro_rules! runner_columns {
    () => {
        "id, name, token_hash, sdks, created_at, registered_at, protocol"
    };
}

/// Inserts a runner.
pub(super) const INSERT_RUNNER: &str = "INSERT INTO runners \
     (id, name, token_hash, sdks, created_at, registered_at, protocol) \
     VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// Every runner, oldest first.
pub(super) const RUNNERS: &str = concat!(
    "SELECT ",
    runner_columns!(),
    " FROM runners ORDER BY created_at, id"
);

/// One runner by name.
pub(super) const RUNNER_BY_NAME: &str = concat!(
    "SELECT ",
    runner_columns!(),
    " FROM runners WHERE name = $1"
);

/// Records a registration.
pub(super) const SET_RUNNER_SDKS: &str =
    "UPDATE runners SET sdks = $2, registered_at = $3 WHERE id = $1";

/// Inserts an HTTP API token.
pub(super) const INSERT_API_TOKEN: &str = "INSERT INTO api_tokens \
     (id, name, token_hash, created_at, read_only) VALUES ($1, $2, $3, $4, $5)";

/// Every HTTP API token, oldest first.
pub(super) const API_TOKENS: &str =
    "SELECT id, name, token_hash, created_at, read_only FROM api_tokens ORDER BY created_at, id";

/// Deletes an HTTP API token by name.
pub(super) const DELETE_API_TOKEN: &str = "DELETE FROM api_tokens WHERE name = $1";

/// Keeps `$1` as the replicas' shared secret unless one is kept already.
pub(super) const INSERT_CLUSTER_SECRET: &str =
    "INSERT INTO cluster_secret (id, secret) VALUES (1, $1) ON CONFLICT (id) DO NOTHING";

/// The replicas' shared secret.
pub(super) const CLUSTER_SECRET: &str = "SELECT secret FROM cluster_secret WHERE id = 1";

/// Running turns (those being interrupted still run) and live agents per
/// runner.
pub(super) const RUNNER_LOADS: &str = "SELECT r.id AS runner_id, \
     (SELECT COUNT(*) FROM turns t JOIN threads th ON th.id = t.thread_id \
      WHERE th.runner_id = r.id AND t.status IN ('running', 'interrupting')) AS running_turns, \
     (SELECT COUNT(*) FROM agents a WHERE a.runner_id = r.id AND a.status <> 'deleted') AS agents \
     FROM runners r ORDER BY r.id";

/// Columns of an agent row.
macro_rules! agent_columns {
    () => {
        "id, runner_id, sdk, model, status, created_at, updated_at"
    };
}

/// Inserts or updates agents (their creation time stays).
pub(super) const AGENT_ROWS: Rows = Rows {
    insert: "INSERT INTO agents (id, runner_id, sdk, model, status, created_at, updated_at) ",
    columns: 7,
    conflict: " ON CONFLICT (id) DO UPDATE SET runner_id = excluded.runner_id, \
        sdk = excluded.sdk, model = excluded.model, status = excluded.status, \
        updated_at = excluded.updated_at",
};

/// One agent.
pub(super) const AGENT: &str = concat!("SELECT ", agent_columns!(), " FROM agents WHERE id = $1");

/// Every agent, oldest first.
pub(super) const AGENTS: &str = concat!(
    "SELECT ",
    agent_columns!(),
    " FROM agents ORDER BY created_at, id"
);

/// Inserts or updates skills of agents.
pub(super) const SKILL_ROWS: Rows = Rows {
    insert: "INSERT INTO agent_skills (agent_id, package_name, status, updated_at) ",
    columns: 4,
    conflict: " ON CONFLICT (agent_id, package_name) DO UPDATE SET \
        status = excluded.status, updated_at = excluded.updated_at",
};

/// An agent's skills, by name.
pub(super) const SKILLS: &str = "SELECT agent_id, package_name, status, updated_at \
     FROM agent_skills WHERE agent_id = $1 ORDER BY package_name";

/// Records requests; one recorded already only gains the thread and turn
/// it did not know yet (so sending a request again changes nothing).
pub(super) const REQUEST_ROWS: Rows = Rows {
    insert: "INSERT INTO requests \
        (id, runner_id, kind, agent_id, thread_id, turn_id, params, created_at) ",
    columns: 8,
    conflict: " ON CONFLICT (id) DO UPDATE SET \
        thread_id = COALESCE(requests.thread_id, excluded.thread_id), \
        turn_id = COALESCE(requests.turn_id, excluded.turn_id)",
};

/// One request.
pub(super) const REQUEST: &str = "SELECT id, runner_id, kind, agent_id, thread_id, turn_id, \
     params, created_at FROM requests WHERE id = $1";

/// Columns of a thread row.
macro_rules! thread_columns {
    () => {
        "id, agent_id, runner_id, model, reasoning_level, status, created_at, updated_at, \
         name, token_usage, mcp_servers"
    };
}

/// One thread.
pub(super) const THREAD: &str =
    concat!("SELECT ", thread_columns!(), " FROM threads WHERE id = $1");

/// An agent's threads, oldest first.
pub(super) const THREADS_OF_AGENT: &str = concat!(
    "SELECT ",
    thread_columns!(),
    " FROM threads WHERE agent_id = $1 ORDER BY created_at, id"
);

/// Inserts or updates threads (their creation time stays).
pub(super) const THREAD_ROWS: Rows = Rows {
    insert: "INSERT INTO threads (id, agent_id, runner_id, model, reasoning_level, status, \
        created_at, updated_at, name, token_usage, mcp_servers) ",
    columns: 11,
    conflict: " ON CONFLICT (id) DO UPDATE SET agent_id = excluded.agent_id, \
        runner_id = excluded.runner_id, model = excluded.model, \
        reasoning_level = excluded.reasoning_level, status = excluded.status, \
        updated_at = excluded.updated_at, name = excluded.name, \
        token_usage = excluded.token_usage, mcp_servers = excluded.mcp_servers",
};

/// Columns of a turn row.
macro_rules! turn_columns {
    () => {
        "thread_id, id, request_id, status, first_seq, created_at, updated_at"
    };
}

/// A thread's turns, in the order they were first seen.
pub(super) const TURNS: &str = concat!(
    "SELECT ",
    turn_columns!(),
    " FROM turns WHERE thread_id = $1 ORDER BY first_seq"
);

/// Up to `$2` of a thread's turn ids.
pub(super) const TURN_IDS: &str = "SELECT id FROM turns WHERE thread_id = $1 LIMIT $2";

/// One turn.
pub(super) const TURN: &str = concat!(
    "SELECT ",
    turn_columns!(),
    " FROM turns WHERE thread_id = $1 AND id = $2"
);

/// Inserts or updates turns; the first seq, the starting request and the
/// creation time are kept from the first insert.
pub(super) const TURN_ROWS: Rows = Rows {
    insert: "INSERT INTO turns \
        (thread_id, id, request_id, status, first_seq, created_at, updated_at) ",
    columns: 7,
    conflict: " ON CONFLICT (thread_id, id) DO UPDATE SET \
        status = excluded.status, updated_at = excluded.updated_at",
};

/// Columns of an item row.
macro_rules! item_columns {
    () => {
        "thread_id, id, turn_id, item_type, status, text, command, first_seq, created_at, updated_at"
    };
}

/// A thread's items, in the order they were first seen.
pub(super) const ITEMS: &str = concat!(
    "SELECT ",
    item_columns!(),
    " FROM items WHERE thread_id = $1 ORDER BY first_seq"
);

/// One item.
pub(super) const ITEM: &str = concat!(
    "SELECT ",
    item_columns!(),
    " FROM items WHERE thread_id = $1 AND id = $2"
);

/// Inserts or updates items; the first seq and creation time stay.
pub(super) const ITEM_ROWS: Rows = Rows {
    insert: "INSERT INTO items (thread_id, id, turn_id, item_type, status, text, command, \
        first_seq, created_at, updated_at) ",
    columns: 10,
    conflict: " ON CONFLICT (thread_id, id) DO UPDATE SET turn_id = excluded.turn_id, \
        item_type = excluded.item_type, status = excluded.status, text = excluded.text, \
        command = excluded.command, updated_at = excluded.updated_at",
};

/// The last seq of a thread's log (0 when empty).
pub(super) const LAST_SEQ: &str =
    "SELECT COALESCE(MAX(seq), 0) FROM thread_updates WHERE thread_id = $1";

/// Appends log entries.
pub(super) const UPDATE_ROWS: Rows = Rows {
    insert: "INSERT INTO thread_updates (thread_id, seq, ts, kind, data) ",
    columns: 5,
    conflict: "",
};

/// A page of a thread's log after a seq.
pub(super) const UPDATES_AFTER: &str = "SELECT thread_id, seq, ts, kind, data \
     FROM thread_updates WHERE thread_id = $1 AND seq > $2 ORDER BY seq LIMIT $3";

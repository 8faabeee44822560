//! The SQL the stores run. Portable on purpose (`$n` placeholders, BIGINT,
//! TEXT, `ON CONFLICT ... DO UPDATE`): the PostgreSQL store runs the same
//! text, except its commit, one statement of its own (`postgres/write.rs`),
//! and its memories' full-text index (`tsvector` instead of FTS5).

use std::sync::OnceLock;

/// Upserts one thread row; `excluded` is the row that failed to insert.
pub(crate) const UPSERT_THREAD: &str = "INSERT INTO threads \
     (id, created_at, updated_at, archived, status, data) \
     VALUES ($1, $2, $3, $4, $5, $6) \
     ON CONFLICT (id) DO UPDATE SET \
     created_at = excluded.created_at, updated_at = excluded.updated_at, \
     archived = excluded.archived, status = excluded.status, data = excluded.data";

/// One thread's events from a seq on.
pub(crate) const THREAD_EVENTS: &str = "SELECT seq, ts, turn_id, item_id, payload, pos \
     FROM events WHERE thread_id = $1 AND seq >= $2 ORDER BY seq";

/// A page of every thread's events after a commit cursor, in commit order.
pub(crate) const EVENTS_AFTER: &str = "SELECT thread_id, seq, ts, turn_id, item_id, payload, pos \
     FROM events WHERE pos > $1 ORDER BY pos LIMIT $2";

/// The cursor of the last event committed (0 when none is): the newest
/// event's, or the one remembered when the newest events went with their
/// thread ([`DELETED_CURSOR`]), so no cursor is ever given twice.
pub(crate) const LAST_CURSOR: &str = "SELECT MAX(c) FROM (\
     SELECT COALESCE(MAX(pos), 0) AS c FROM events \
     UNION ALL SELECT CAST(value AS BIGINT) AS c FROM settings WHERE key = 'deleted_cursor'\
     ) AS cursors";

/// The setting remembering the last cursor given when a thread was deleted.
pub(crate) const DELETED_CURSOR: &str = "deleted_cursor";

/// What deleting a thread deletes, in order, each statement with one
/// parameter: the thread's memory scope (`Scope`) or its id (`Id`). SQLite's
/// search index rows go before these ([`DELETE_THREAD_FTS`]).
pub(crate) const DELETE_THREAD: [(&str, ThreadKey); 5] = [
    (
        "DELETE FROM memory_tags WHERE memory_pk IN (SELECT pk FROM memories WHERE scope = $1)",
        ThreadKey::Scope,
    ),
    ("DELETE FROM memories WHERE scope = $1", ThreadKey::Scope),
    ("DELETE FROM events WHERE thread_id = $1", ThreadKey::Id),
    ("DELETE FROM threads WHERE id = $1", ThreadKey::Id),
    ("DELETE FROM settings WHERE key = $1", ThreadKey::ApiKey),
];

/// Which of a thread's keys a statement of [`DELETE_THREAD`] binds.
#[derive(Clone, Copy)]
pub(crate) enum ThreadKey {
    /// Its memory scope (`thread:<id>`).
    Scope,
    /// Its id.
    Id,
    /// The setting of its API key ([`crate::thread_key_setting`]).
    ApiKey,
}

/// SQLite's full-text index rows of a thread's memories (`$1`: its scope).
pub(crate) const DELETE_THREAD_FTS: &str =
    "DELETE FROM memories_fts WHERE rowid IN (SELECT pk FROM memories WHERE scope = $1)";

/// One thread row.
pub(crate) const THREAD: &str = "SELECT id, data FROM threads WHERE id = $1";

/// Ids of the threads whose stored status is `$1`.
pub(crate) const THREADS_WITH_STATUS: &str = "SELECT id FROM threads WHERE status = $1 ORDER BY id";

// Listing: one statement per filter combination rather than `($1 IS NULL OR ...)`,
// so each can use the (archived, id) index or the primary key.

/// A page of all threads.
pub(crate) const LIST_ALL: &str = "SELECT id, data FROM threads ORDER BY id DESC LIMIT $1";
/// A page of all threads after a cursor.
pub(crate) const LIST_ALL_AFTER: &str =
    "SELECT id, data FROM threads WHERE id < $1 ORDER BY id DESC LIMIT $2";
/// A page of threads filtered on archived.
pub(crate) const LIST_ARCHIVED: &str =
    "SELECT id, data FROM threads WHERE archived = $1 ORDER BY id DESC LIMIT $2";
/// A page of threads filtered on archived, after a cursor.
pub(crate) const LIST_ARCHIVED_AFTER: &str =
    "SELECT id, data FROM threads WHERE archived = $1 AND id < $2 ORDER BY id DESC LIMIT $3";

/// Every stored provider, by name.
pub(crate) const PROVIDERS: &str = "SELECT name, data FROM providers ORDER BY name";

/// Inserts or replaces one provider.
pub(crate) const UPSERT_PROVIDER: &str = "INSERT INTO providers (name, data) VALUES ($1, $2) \
     ON CONFLICT (name) DO UPDATE SET data = excluded.data";

/// Deletes one provider.
pub(crate) const DELETE_PROVIDER: &str = "DELETE FROM providers WHERE name = $1";

/// One setting.
pub(crate) const SETTING: &str = "SELECT value FROM settings WHERE key = $1";

/// Inserts or replaces one setting.
pub(crate) const UPSERT_SETTING: &str = "INSERT INTO settings (key, value) VALUES ($1, $2) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value";

/// Columns bound per event row in [`insert_events`].
pub(crate) const EVENT_COLUMNS: usize = 8;

/// Largest number of rows in one multi-row insert, a power of two.
/// 128 rows x 8 columns stays far below both SQLite's and PostgreSQL's
/// parameter limits.
pub(crate) const MAX_INSERT_ROWS: usize = 128;

/// `INSERT INTO events ... VALUES (...), (...)` for `rows` rows, which must be a
/// power of two up to [`MAX_INSERT_ROWS`]. Only these few sizes exist, so each
/// text is built once, when first needed (most processes only ever commit a
/// few events at a time), and the connection's prepared-statement cache
/// reuses it.
pub(crate) fn insert_events(rows: usize) -> &'static str {
    const SIZES: usize = MAX_INSERT_ROWS.ilog2() as usize + 1;
    static TEXTS: [OnceLock<String>; SIZES] = [const { OnceLock::new() }; SIZES];
    let index = (rows.max(1).ilog2() as usize).min(SIZES - 1);
    TEXTS[index].get_or_init(|| build_insert_events(1 << index))
}

fn build_insert_events(rows: usize) -> String {
    use std::fmt::Write;
    let mut sql = String::from(
        "INSERT INTO events (thread_id, seq, ts, turn_id, item_id, kind, payload, pos) VALUES ",
    );
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for col in 0..EVENT_COLUMNS {
            if col > 0 {
                sql.push_str(", ");
            }
            // Writing to a String cannot fail.
            let _ = write!(sql, "${}", row * EVENT_COLUMNS + col + 1);
        }
        sql.push(')');
    }
    sql
}

/// Every job, by name.
pub(crate) const JOBS: &str = "SELECT id, data FROM cron_jobs ORDER BY name";
/// One job by id.
pub(crate) const JOB: &str = "SELECT id, data FROM cron_jobs WHERE id = $1";
/// One job by name.
pub(crate) const JOB_BY_NAME: &str = "SELECT id, data FROM cron_jobs WHERE name = $1";
/// Inserts or replaces a job (a name taken by another job violates `UNIQUE`).
pub(crate) const UPSERT_JOB: &str = "INSERT INTO cron_jobs (id, name, data) VALUES ($1, $2, $3) \
     ON CONFLICT (id) DO UPDATE SET name = excluded.name, data = excluded.data";
/// Deletes a job's executions (before the job, also where foreign keys are off).
pub(crate) const DELETE_JOB_EXECUTIONS: &str = "DELETE FROM cron_executions WHERE job_id = $1";
/// Deletes a job.
pub(crate) const DELETE_JOB: &str = "DELETE FROM cron_jobs WHERE id = $1";
/// Inserts or replaces an execution.
pub(crate) const UPSERT_EXECUTION: &str = "INSERT INTO cron_executions \
     (id, job_id, started_at, status, data) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (id) DO UPDATE SET job_id = excluded.job_id, \
     started_at = excluded.started_at, status = excluded.status, data = excluded.data";
/// A job's executions, newest first.
pub(crate) const EXECUTIONS: &str = "SELECT id, data FROM cron_executions WHERE job_id = $1 \
     ORDER BY started_at DESC, id DESC LIMIT $2";
/// Executions with a given status, oldest first.
pub(crate) const EXECUTIONS_WITH_STATUS: &str = "SELECT id, data FROM cron_executions \
     WHERE status = $1 ORDER BY started_at, id";

/// Every agent.
pub(crate) const AGENTS: &str = "SELECT id, data FROM agents ORDER BY id";
/// One agent.
pub(crate) const AGENT: &str = "SELECT id, data FROM agents WHERE id = $1";
/// Inserts or replaces an agent.
pub(crate) const UPSERT_AGENT: &str = "INSERT INTO agents (id, data) VALUES ($1, $2) \
     ON CONFLICT (id) DO UPDATE SET data = excluded.data";
/// Deletes an agent.
pub(crate) const DELETE_AGENT: &str = "DELETE FROM agents WHERE id = $1";

/// The head of every memory search, up to the tables it reads (`m` is
/// `memories`): each memory's columns (`shared::memories::MemoryRow`) and
/// how many matched in all.
pub(crate) const SEARCH_MEMORIES: &str = "SELECT m.id, m.scope, m.memory_type, m.importance, \
     m.created_at, m.access_count, m.last_accessed, m.content, m.tags, m.metadata, \
     COUNT(*) OVER () AS total FROM ";
/// A memory's columns, for `RETURNING` (see [`SEARCH_MEMORIES`]).
pub(crate) const MEMORY_RETURNING: &str = "id, scope, memory_type, importance, created_at, \
     access_count, last_accessed, content, tags, metadata";
/// What writing a memory needs of the one stored with its id, if any.
pub(crate) const MEMORY_BY_ID: &str =
    "SELECT pk, scope, access_count, last_accessed FROM memories WHERE id = $1";
/// Replaces a memory's content (its scope, id and access counts stay).
pub(crate) const UPDATE_MEMORY: &str = "UPDATE memories SET memory_type = $1, importance = $2, \
     created_at = $3, content = $4, tags = $5, metadata = $6 WHERE pk = $7";
/// Inserts a memory, returning its `pk` (PostgreSQL's has its search vector
/// too: `postgres/memories.rs`).
pub(crate) const INSERT_MEMORY: &str = "INSERT INTO memories (id, scope, memory_type, \
     importance, created_at, access_count, last_accessed, content, tags, metadata) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING pk";
/// Deletes a memory's tags.
pub(crate) const DELETE_MEMORY_TAGS: &str = "DELETE FROM memory_tags WHERE memory_pk = $1";
/// Tags a memory.
pub(crate) const INSERT_MEMORY_TAG: &str =
    "INSERT INTO memory_tags (memory_pk, tag) VALUES ($1, $2) ON CONFLICT DO NOTHING";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_texts_have_the_asked_row_count() {
        assert!(insert_events(1).ends_with("VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"));
        assert!(insert_events(2).ends_with("($9, $10, $11, $12, $13, $14, $15, $16)"));
        assert_eq!(insert_events(64).matches('(').count(), 65);
        assert_eq!(insert_events(MAX_INSERT_ROWS).matches('(').count(), 129);
    }
}

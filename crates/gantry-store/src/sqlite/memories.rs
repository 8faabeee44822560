//! The memories' full-text index on SQLite: an FTS5 table (`memories_fts`,
//! a row per memory keyed by its `pk`) ranked with `bm25()`, written in the
//! same transaction as the memory (see `impl_memory_storage`).

use gantry_types::memory::MemoryItem;
use sqlx::QueryBuilder;

use super::{Conn, Db, SqliteStore};
use crate::memories::tokens::fts_any;
use crate::shared::db_error;
use crate::{StoreError, sql};

impl SqliteStore {
    /// The tables holding a memory's rows, with the column naming it: the
    /// index and the tags first, found through the memory.
    pub(super) const MEMORY_TABLES: [(&str, &str); 3] = [
        ("memories_fts", "rowid"),
        ("memory_tags", "memory_pk"),
        ("memories", "pk"),
    ];

    /// Inserts a memory's row, returning its `pk`.
    pub(super) const INSERT_MEMORY: &str = sql::INSERT_MEMORY;

    /// Writes the index row of the memory `pk`, replacing its old one if
    /// the memory was `replaced`.
    pub(super) async fn index_memory(
        conn: &mut Conn,
        pk: i64,
        memory: &MemoryItem,
        replaced: bool,
    ) -> Result<(), StoreError> {
        if replaced {
            sqlx::query("DELETE FROM memories_fts WHERE rowid = $1")
                .bind(pk)
                .execute(&mut *conn)
                .await
                .map_err(db_error("write memory"))?;
        }
        sqlx::query("INSERT INTO memories_fts (rowid, content, tags) VALUES ($1, $2, $3)")
            .bind(pk)
            .bind(&memory.content)
            .bind(memory.tags.join(" "))
            .execute(&mut *conn)
            .await
            .map_err(db_error("index memory"))?;
        Ok(())
    }

    /// The head of a search for `terms` (not empty) and its ranking.
    pub(super) fn push_matches(q: &mut QueryBuilder<Db>, terms: &[String]) -> Option<&'static str> {
        // The full-text part runs on its own: bm25() cannot be evaluated
        // in the same query as the window function that counts the matches.
        q.push(
            "WITH hits AS MATERIALIZED (SELECT rowid AS pk, bm25(memories_fts) AS score \
             FROM memories_fts WHERE memories_fts MATCH ",
        )
        .push_bind(fts_any(terms))
        .push(") ")
        .push(sql::SEARCH_MEMORIES)
        .push("hits JOIN memories AS m ON m.pk = hits.pk WHERE 1 = 1");
        // bm25() is negative: the more relevant, the lower.
        Some("hits.score")
    }
}

//! The memories' full-text index on PostgreSQL: each memory row's own
//! `search` column, a `tsvector` (GIN-indexed, built from the same tokens as
//! on SQLite, see `memories/tsvector.rs`) ranked with `ts_rank`, written in
//! the same transaction as the memory (see `impl_memory_storage`).

use gantry_types::memory::MemoryItem;
use sqlx::QueryBuilder;

use super::{Conn, Db, PostgresStore};
use crate::memories::tsvector;
use crate::shared::db_error;
use crate::{StoreError, sql};

impl PostgresStore {
    /// The tables holding a memory's rows, with the column naming it: the
    /// tags first, found through the memory (its index is in its row).
    pub(super) const MEMORY_TABLES: [(&str, &str); 2] =
        [("memory_tags", "memory_pk"), ("memories", "pk")];

    /// `sql::INSERT_MEMORY` with an empty search vector, which
    /// [`PostgresStore::index_memory`] fills in the same transaction.
    pub(super) const INSERT_MEMORY: &str = "INSERT INTO memories (id, scope, memory_type, importance, \
         created_at, access_count, last_accessed, content, tags, metadata, search) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, ''::tsvector) RETURNING pk";

    /// Writes the search vector of the memory `pk`.
    pub(super) async fn index_memory(
        conn: &mut Conn,
        pk: i64,
        memory: &MemoryItem,
        _replaced: bool,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE memories SET search = $2::tsvector WHERE pk = $1")
            .bind(pk)
            .bind(tsvector::document(&memory.content, &memory.tags))
            .execute(&mut *conn)
            .await
            .map_err(db_error("index memory"))?;
        Ok(())
    }

    /// The head of a search for `terms` (not empty) and its ranking; `None`
    /// when none of them could ever be indexed, so nothing matches.
    pub(super) fn push_matches(q: &mut QueryBuilder<Db>, terms: &[String]) -> Option<&'static str> {
        let query = tsvector::any(terms)?;
        q.push(sql::SEARCH_MEMORIES)
            .push("memories AS m, (SELECT ")
            .push_bind(query)
            .push("::tsquery AS q) AS query WHERE m.search @@ query.q");
        // No length normalisation: ts_rank saturates on repeats so fast
        // that dividing by the length would let a shorter memory naming
        // a word twice outrank one naming it three times.
        Some("ts_rank(m.search, query.q) DESC")
    }
}

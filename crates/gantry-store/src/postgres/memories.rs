//! [`MemoryStorage`] on PostgreSQL: a `memories` table with its own
//! `tsvector` (GIN-indexed, built from the same tokens as on SQLite, see
//! `memories/tsvector.rs`), ranked with `ts_rank`, and its tags.

use std::collections::BTreeMap;

use async_trait::async_trait;
use gantry_types::memory::{
    MemoryId, MemoryItem, MemoryScope, MemorySearchResult, MemoryStats, MemoryType,
};
use sqlx::{PgConnection, Postgres, QueryBuilder};

use super::{PostgresStore, db_error};
use crate::memories::tokens::query_terms;
use crate::memories::tsvector;
use crate::{MemorySearch, MemoryStorage, StoreError};

/// The columns a memory is read from, in [`Row`] order (`m` is `memories`).
const COLUMNS: &str = "m.id, m.scope, m.memory_type, m.importance, m.created_at, \
     m.access_count, m.last_accessed, m.content, m.tags, m.metadata";

/// [`COLUMNS`] unqualified, for `RETURNING`.
const RETURNING: &str = "id, scope, memory_type, importance, created_at, \
     access_count, last_accessed, content, tags, metadata";

/// One memory's columns (see [`COLUMNS`]).
type Row = (
    String,
    String,
    String,
    f64,
    i64,
    i64,
    Option<i64>,
    String,
    String,
    String,
);

/// A row of a search: the memory and how many rows matched in all.
type SearchRow = (
    String,
    String,
    String,
    f64,
    i64,
    i64,
    Option<i64>,
    String,
    String,
    String,
    i64,
);

#[async_trait]
impl MemoryStorage for PostgresStore {
    async fn put_memory(&self, memory: &MemoryItem) -> Result<Option<MemoryItem>, StoreError> {
        let tags = serde_json::to_string(&memory.tags)
            .map_err(|e| StoreError::Database(format!("memory {}: encode tags: {e}", memory.id)))?;
        let metadata = serde_json::to_string(&memory.metadata).map_err(|e| {
            StoreError::Database(format!("memory {}: encode metadata: {e}", memory.id))
        })?;
        let mut tx = self.pool.begin().await.map_err(db_error("begin"))?;
        let written = put(&mut tx, memory, tags, metadata).await;
        match written {
            Ok(Some(stored)) => {
                tx.commit().await.map_err(db_error("commit memory"))?;
                Ok(Some(stored))
            }
            other => {
                // Nothing of a refused or failed write may stay behind.
                let _ = tx.rollback().await;
                other
            }
        }
    }

    async fn touch_memory(
        &self,
        scopes: &[MemoryScope],
        id: &MemoryId,
        now: i64,
    ) -> Result<Option<MemoryItem>, StoreError> {
        if scopes.is_empty() {
            return Ok(None);
        }
        let mut q = QueryBuilder::<Postgres>::new(
            "UPDATE memories AS m SET access_count = access_count + 1, last_accessed = ",
        );
        q.push_bind(now)
            .push(" WHERE m.id = ")
            .push_bind(id.0.clone());
        push_scopes(&mut q, scopes);
        q.push(" RETURNING ").push(RETURNING);
        let row: Option<Row> = q
            .build_query_as()
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error("retrieve memory"))?;
        row.map(decode).transpose()
    }

    async fn search_memories(
        &self,
        search: &MemorySearch,
    ) -> Result<MemorySearchResult, StoreError> {
        if search.scopes.is_empty() {
            return Ok(MemorySearchResult::default());
        }
        let terms = search.text.as_deref().map(query_terms).unwrap_or_default();
        let query = if terms.is_empty() {
            None
        } else {
            // Words, but none that could ever be indexed: nothing matches.
            let Some(query) = tsvector::any(&terms) else {
                return Ok(MemorySearchResult::default());
            };
            Some(query)
        };
        let mut q = QueryBuilder::<Postgres>::new("SELECT ");
        q.push(COLUMNS)
            .push(", COUNT(*) OVER () FROM memories AS m");
        if let Some(query) = &query {
            q.push(", (SELECT ")
                .push_bind(query.clone())
                .push("::tsquery AS q) AS query WHERE m.search @@ query.q");
        } else {
            q.push(" WHERE 1 = 1");
        }
        push_scopes(&mut q, &search.scopes);
        if let Some(min) = search.min_importance {
            q.push(" AND m.importance >= ").push_bind(f64::from(min));
        }
        if let Some(since) = search.since {
            q.push(" AND m.created_at >= ").push_bind(since);
        }
        if !search.tags.is_empty() {
            q.push(" AND m.pk IN (SELECT memory_pk FROM memory_tags WHERE tag IN (");
            let mut tags = q.separated(", ");
            for tag in &search.tags {
                tags.push_bind(tag.clone());
            }
            q.push(") GROUP BY memory_pk HAVING COUNT(*) = ")
                .push_bind(count_i64(search.tags.len()))
                .push(")");
        }
        q.push(" ORDER BY ");
        if query.is_some() {
            // No length normalisation: ts_rank saturates on repeats so fast
            // that dividing by the length would let a shorter memory naming
            // a word twice outrank one naming it three times.
            q.push("ts_rank(m.search, query.q) DESC, ");
        }
        q.push("m.importance DESC, m.created_at DESC, m.id DESC LIMIT ")
            .push_bind(count_i64(search.limit.max(1)));
        let rows: Vec<SearchRow> = q
            .build_query_as()
            .fetch_all(&self.pool)
            .await
            .map_err(db_error("search memories"))?;
        let total_count = rows.first().map_or(0, |r| u64::try_from(r.10).unwrap_or(0));
        let memories = rows
            .into_iter()
            .map(|r| decode((r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7, r.8, r.9)))
            .collect::<Result<_, _>>()?;
        Ok(MemorySearchResult {
            memories,
            total_count,
        })
    }

    async fn memory_stats(&self, scopes: &[MemoryScope]) -> Result<MemoryStats, StoreError> {
        let mut stats = MemoryStats::default();
        if scopes.is_empty() {
            return Ok(stats);
        }
        let mut q = QueryBuilder::<Postgres>::new(
            "SELECT m.memory_type, COUNT(*) FROM memories AS m WHERE 1 = 1",
        );
        push_scopes(&mut q, scopes);
        q.push(" GROUP BY m.memory_type");
        let rows: Vec<(String, i64)> = q
            .build_query_as()
            .fetch_all(&self.pool)
            .await
            .map_err(db_error("count memories"))?;
        for (name, count) in rows {
            let memory_type = parse_type(&name, "in the counts")?;
            stats.add(memory_type, u64::try_from(count).unwrap_or(0));
        }
        Ok(stats)
    }

    async fn clear_memories(
        &self,
        scopes: &[MemoryScope],
        types: &[MemoryType],
    ) -> Result<u64, StoreError> {
        if scopes.is_empty() || types.is_empty() {
            return Ok(0);
        }
        // The rows to delete, as a subquery each statement repeats.
        let selected = |q: &mut QueryBuilder<Postgres>| {
            q.push("SELECT m.pk FROM memories AS m WHERE 1 = 1");
            push_scopes(q, scopes);
            q.push(" AND m.memory_type IN (");
            let mut list = q.separated(", ");
            for t in types {
                list.push_bind(t.as_str());
            }
            q.push(")");
        };
        self.delete_selected(selected, "clear memories").await
    }

    async fn delete_memory(
        &self,
        scopes: &[MemoryScope],
        id: &MemoryId,
    ) -> Result<bool, StoreError> {
        if scopes.is_empty() {
            return Ok(false);
        }
        let selected = |q: &mut QueryBuilder<Postgres>| {
            q.push("SELECT m.pk FROM memories AS m WHERE m.id = ")
                .push_bind(id.0.clone());
            push_scopes(q, scopes);
        };
        Ok(self.delete_selected(selected, "delete memory").await? > 0)
    }
}

impl PostgresStore {
    /// Deletes the memories `selected` pushes a `SELECT m.pk ...` of, with
    /// their tags, in one transaction; returns how many.
    async fn delete_selected(
        &self,
        selected: impl Fn(&mut QueryBuilder<Postgres>),
        what: &'static str,
    ) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_error("begin"))?;
        let deleted = async {
            let mut count = 0;
            // The tags first: they are found through the memories.
            for (table, key) in [("memory_tags", "memory_pk"), ("memories", "pk")] {
                let mut q = QueryBuilder::<Postgres>::new("DELETE FROM ");
                q.push(table).push(" WHERE ").push(key).push(" IN (");
                selected(&mut q);
                q.push(")");
                let done = q.build().execute(&mut *tx).await.map_err(db_error(what))?;
                // The last statement deletes the memories themselves.
                count = done.rows_affected();
            }
            Ok::<_, StoreError>(count)
        }
        .await;
        match deleted {
            Ok(count) => {
                tx.commit().await.map_err(db_error(what))?;
                Ok(count)
            }
            Err(e) => {
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }
}

/// Inserts or replaces `memory` with its tags and search vector, inside a
/// transaction; `None` if its id is taken in another scope.
async fn put(
    conn: &mut PgConnection,
    memory: &MemoryItem,
    tags: String,
    metadata: String,
) -> Result<Option<MemoryItem>, StoreError> {
    let scope = memory.scope.key();
    let search = tsvector::document(&memory.content, &memory.tags);
    let existing: Option<(i64, String, i64, Option<i64>)> =
        sqlx::query_as("SELECT pk, scope, access_count, last_accessed FROM memories WHERE id = $1")
            .bind(memory.id.as_str())
            .fetch_optional(&mut *conn)
            .await
            .map_err(db_error("read memory"))?;
    let mut stored = memory.clone();
    let pk = match existing {
        Some((_, other, _, _)) if other != scope => return Ok(None),
        Some((pk, _, access_count, last_accessed)) => {
            stored.access_count = u32::try_from(access_count).unwrap_or(u32::MAX);
            stored.last_accessed = last_accessed;
            sqlx::query(
                "UPDATE memories SET memory_type = $1, importance = $2, created_at = $3, \
                 content = $4, tags = $5, metadata = $6, search = $8::tsvector WHERE pk = $7",
            )
            .bind(memory.memory_type.as_str())
            .bind(f64::from(memory.importance))
            .bind(memory.timestamp)
            .bind(&memory.content)
            .bind(&tags)
            .bind(&metadata)
            .bind(pk)
            .bind(&search)
            .execute(&mut *conn)
            .await
            .map_err(db_error("write memory"))?;
            // The tags are rewritten below.
            sqlx::query("DELETE FROM memory_tags WHERE memory_pk = $1")
                .bind(pk)
                .execute(&mut *conn)
                .await
                .map_err(db_error("write memory"))?;
            pk
        }
        None => {
            let (pk,): (i64,) = sqlx::query_as(
                "INSERT INTO memories (id, scope, memory_type, importance, created_at, \
                 access_count, last_accessed, content, tags, metadata, search) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::tsvector) RETURNING pk",
            )
            .bind(memory.id.as_str())
            .bind(&scope)
            .bind(memory.memory_type.as_str())
            .bind(f64::from(memory.importance))
            .bind(memory.timestamp)
            .bind(i64::from(memory.access_count))
            .bind(memory.last_accessed)
            .bind(&memory.content)
            .bind(&tags)
            .bind(&metadata)
            .bind(&search)
            .fetch_one(&mut *conn)
            .await
            .map_err(db_error("write memory"))?;
            pk
        }
    };
    for tag in &memory.tags {
        sqlx::query(
            "INSERT INTO memory_tags (memory_pk, tag) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        )
        .bind(pk)
        .bind(tag)
        .execute(&mut *conn)
        .await
        .map_err(db_error("write memory tags"))?;
    }
    Ok(Some(stored))
}

/// ` AND m.scope IN (...)`.
fn push_scopes(q: &mut QueryBuilder<Postgres>, scopes: &[MemoryScope]) {
    q.push(" AND m.scope IN (");
    let mut list = q.separated(", ");
    for scope in scopes {
        list.push_bind(scope.key());
    }
    q.push(")");
}

/// A count or limit as a BIGINT (saturating: no search asks for more).
fn count_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn parse_type(name: &str, what: &str) -> Result<MemoryType, StoreError> {
    MemoryType::parse(name)
        .ok_or_else(|| StoreError::Corrupt(format!("memory type {name:?} {what}")))
}

/// Rebuilds a memory from its columns; bad JSON or names are [`StoreError::Corrupt`].
fn decode(row: Row) -> Result<MemoryItem, StoreError> {
    let (
        id,
        scope,
        memory_type,
        importance,
        created_at,
        access_count,
        last_accessed,
        content,
        tags,
        metadata,
    ) = row;
    let corrupt = |what: &str| StoreError::Corrupt(format!("memory {id}: {what}"));
    let scope =
        MemoryScope::from_key(&scope).ok_or_else(|| corrupt(&format!("scope {scope:?}")))?;
    let memory_type = parse_type(&memory_type, &format!("of memory {id}"))?;
    let tags: Vec<String> =
        serde_json::from_str(&tags).map_err(|e| corrupt(&format!("tags: {e}")))?;
    let metadata: BTreeMap<String, String> =
        serde_json::from_str(&metadata).map_err(|e| corrupt(&format!("metadata: {e}")))?;
    Ok(MemoryItem {
        id: MemoryId(id),
        content,
        timestamp: created_at,
        // Stored from an f32, so the narrowing is exact.
        importance: importance as f32,
        tags,
        memory_type,
        metadata,
        access_count: u32::try_from(access_count).unwrap_or(u32::MAX),
        last_accessed,
        scope,
    })
}

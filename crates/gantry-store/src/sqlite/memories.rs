//! [`MemoryStorage`] on SQLite: a `memories` table, its tags, and an FTS5
//! index ranked with `bm25()`, kept in sync in the same transaction as
//! every write.

use std::collections::BTreeMap;

use async_trait::async_trait;
use gantry_types::memory::{
    MemoryId, MemoryItem, MemoryScope, MemorySearchResult, MemoryStats, MemoryType,
};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use super::{SqliteStore, db_error};
use crate::memories::tokens::{fts_any, query_terms};
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
impl MemoryStorage for SqliteStore {
    async fn put_memory(&self, memory: &MemoryItem) -> Result<Option<MemoryItem>, StoreError> {
        let tags = serde_json::to_string(&memory.tags)
            .map_err(|e| StoreError::Database(format!("memory {}: encode tags: {e}", memory.id)))?;
        let metadata = serde_json::to_string(&memory.metadata).map_err(|e| {
            StoreError::Database(format!("memory {}: encode metadata: {e}", memory.id))
        })?;
        let _writer = self.writer.lock().await;
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
        let mut q = QueryBuilder::<Sqlite>::new(
            "UPDATE memories AS m SET access_count = access_count + 1, last_accessed = ",
        );
        q.push_bind(now)
            .push(" WHERE m.id = ")
            .push_bind(id.0.clone());
        push_scopes(&mut q, scopes);
        q.push(" RETURNING ").push(RETURNING);
        let _writer = self.writer.lock().await;
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
        // The full-text part runs on its own: bm25() cannot be evaluated
        // in the same query as the window function that counts the matches.
        let mut q = QueryBuilder::<Sqlite>::new("");
        if !terms.is_empty() {
            q.push(
                "WITH hits AS MATERIALIZED (SELECT rowid AS pk, bm25(memories_fts) AS score \
                 FROM memories_fts WHERE memories_fts MATCH ",
            )
            .push_bind(fts_any(&terms))
            .push(") ");
        }
        q.push("SELECT ")
            .push(COLUMNS)
            .push(", COUNT(*) OVER () FROM ");
        if terms.is_empty() {
            q.push("memories AS m WHERE 1 = 1");
        } else {
            q.push("hits JOIN memories AS m ON m.pk = hits.pk WHERE 1 = 1");
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
        if !terms.is_empty() {
            // bm25() is negative: the more relevant, the lower.
            q.push("hits.score, ");
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
        let mut q = QueryBuilder::<Sqlite>::new(
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
        let selected = |q: &mut QueryBuilder<Sqlite>| {
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
        let selected = |q: &mut QueryBuilder<Sqlite>| {
            q.push("SELECT m.pk FROM memories AS m WHERE m.id = ")
                .push_bind(id.0.clone());
            push_scopes(q, scopes);
        };
        Ok(self.delete_selected(selected, "delete memory").await? > 0)
    }
}

impl SqliteStore {
    /// Deletes the memories `selected` pushes a `SELECT m.pk ...` of, with
    /// their tags and index rows, in one transaction; returns how many.
    async fn delete_selected(
        &self,
        selected: impl Fn(&mut QueryBuilder<Sqlite>),
        what: &'static str,
    ) -> Result<u64, StoreError> {
        let _writer = self.writer.lock().await;
        let mut tx = self.pool.begin().await.map_err(db_error("begin"))?;
        let deleted = async {
            let mut count = 0;
            // The index and tags first: they are found through the memories.
            for (table, key) in [
                ("memories_fts", "rowid"),
                ("memory_tags", "memory_pk"),
                ("memories", "pk"),
            ] {
                let mut q = QueryBuilder::<Sqlite>::new("DELETE FROM ");
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

/// Inserts or replaces `memory` with its tags and index row, inside a
/// transaction; `None` if its id is taken in another scope.
async fn put(
    conn: &mut SqliteConnection,
    memory: &MemoryItem,
    tags: String,
    metadata: String,
) -> Result<Option<MemoryItem>, StoreError> {
    let scope = memory.scope.key();
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
                 content = $4, tags = $5, metadata = $6 WHERE pk = $7",
            )
            .bind(memory.memory_type.as_str())
            .bind(f64::from(memory.importance))
            .bind(memory.timestamp)
            .bind(&memory.content)
            .bind(&tags)
            .bind(&metadata)
            .bind(pk)
            .execute(&mut *conn)
            .await
            .map_err(db_error("write memory"))?;
            // The index row and tags are rewritten below.
            sqlx::query("DELETE FROM memories_fts WHERE rowid = $1")
                .bind(pk)
                .execute(&mut *conn)
                .await
                .map_err(db_error("write memory"))?;
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
                 access_count, last_accessed, content, tags, metadata) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING pk",
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
            .fetch_one(&mut *conn)
            .await
            .map_err(db_error("write memory"))?;
            pk
        }
    };
    sqlx::query("INSERT INTO memories_fts (rowid, content, tags) VALUES ($1, $2, $3)")
        .bind(pk)
        .bind(&memory.content)
        .bind(memory.tags.join(" "))
        .execute(&mut *conn)
        .await
        .map_err(db_error("index memory"))?;
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
fn push_scopes(q: &mut QueryBuilder<Sqlite>, scopes: &[MemoryScope]) {
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

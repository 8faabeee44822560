//! `impl_memory_storage!`: [`MemoryStorage`](crate::MemoryStorage) on a
//! SQL store: a `memories` table and its tags, searched by the backend's own
//! full-text index (SQLite's FTS5 table ranked by `bm25()`, PostgreSQL's
//! `tsvector` column ranked by `ts_rank`), which it keeps in the same
//! transaction as every write.

use std::collections::BTreeMap;

use gantry_types::memory::{MemoryId, MemoryItem, MemoryScope, MemoryType};

use crate::StoreError;

/// `impl MemoryStorage for $store`. Besides what the module `shared` says,
/// the store provides its full-text index as associated items:
/// `MEMORY_TABLES` (the tables holding a memory's rows with the column
/// naming it, those that depend on the memory first), `INSERT_MEMORY` (the
/// `sql::INSERT_MEMORY` of its schema), `index_memory(conn, pk, memory,
/// replaced)` (writes the memory's index entry, after its row) and
/// `push_matches(q, terms)` (pushes the head of a search for `terms`, up to
/// its `WHERE` condition, and returns the `ORDER BY` term ranking the
/// matches; `None` when nothing can match).
macro_rules! impl_memory_storage {
    ($store:ty) => {
        const _: () = {
            use async_trait::async_trait;
            use gantry_types::memory::{
                MemoryId, MemoryItem, MemoryScope, MemorySearchResult, MemoryStats, MemoryType,
            };
            use sqlx::QueryBuilder;

            use $crate::memories::tokens::query_terms;
            use $crate::shared::memories::{MemoryRow, SearchRow, decode, parse_type};
            use $crate::shared::{db_error, rows::count_i64};
            use $crate::{MemorySearch, MemoryStorage, StoreError, sql};

            #[async_trait]
            impl MemoryStorage for $store {
                async fn put_memory(
                    &self,
                    memory: &MemoryItem,
                ) -> Result<Option<MemoryItem>, StoreError> {
                    let tags = serde_json::to_string(&memory.tags).map_err(|e| {
                        StoreError::Database(format!("memory {}: encode tags: {e}", memory.id))
                    })?;
                    let metadata = serde_json::to_string(&memory.metadata).map_err(|e| {
                        StoreError::Database(format!("memory {}: encode metadata: {e}", memory.id))
                    })?;
                    let _writes = self.lock_writes().await;
                    let mut tx = self.pool.begin().await.map_err(db_error("begin"))?;
                    match put(&mut tx, memory, tags, metadata).await {
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
                    let mut q = QueryBuilder::<Db>::new(
                        "UPDATE memories AS m SET access_count = access_count + 1, last_accessed = ",
                    );
                    q.push_bind(now)
                        .push(" WHERE m.id = ")
                        .push_bind(id.0.clone());
                    push_scopes(&mut q, scopes);
                    q.push(" RETURNING ").push(sql::MEMORY_RETURNING);
                    let _writes = self.lock_writes().await;
                    let row: Option<MemoryRow> = q
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
                    let mut q = QueryBuilder::<Db>::new("");
                    let rank = if terms.is_empty() {
                        q.push(sql::SEARCH_MEMORIES)
                            .push("memories AS m WHERE 1 = 1");
                        None
                    } else {
                        match <$store>::push_matches(&mut q, &terms) {
                            Some(rank) => Some(rank),
                            // Words, but none that could ever be indexed.
                            None => return Ok(MemorySearchResult::default()),
                        }
                    };
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
                    if let Some(rank) = rank {
                        q.push(rank).push(", ");
                    }
                    q.push("m.importance DESC, m.created_at DESC, m.id DESC LIMIT ")
                        .push_bind(count_i64(search.limit.max(1)));
                    let rows: Vec<SearchRow> = q
                        .build_query_as()
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_error("search memories"))?;
                    let total_count = rows
                        .first()
                        .map_or(0, |r| u64::try_from(r.total).unwrap_or(0));
                    let memories = rows
                        .into_iter()
                        .map(|r| decode(r.memory))
                        .collect::<Result<_, _>>()?;
                    Ok(MemorySearchResult {
                        memories,
                        total_count,
                    })
                }

                async fn memory_stats(
                    &self,
                    scopes: &[MemoryScope],
                ) -> Result<MemoryStats, StoreError> {
                    let mut stats = MemoryStats::default();
                    if scopes.is_empty() {
                        return Ok(stats);
                    }
                    let mut q = QueryBuilder::<Db>::new(
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
                    let selected = |q: &mut QueryBuilder<Db>| {
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
                    let selected = |q: &mut QueryBuilder<Db>| {
                        q.push("SELECT m.pk FROM memories AS m WHERE m.id = ")
                            .push_bind(id.0.clone());
                        push_scopes(q, scopes);
                    };
                    Ok(self.delete_selected(selected, "delete memory").await? > 0)
                }
            }

            impl $store {
                /// Deletes the memories `selected` pushes a `SELECT m.pk ...`
                /// of, with every row of theirs (`MEMORY_TABLES`), in one
                /// transaction; returns how many.
                async fn delete_selected(
                    &self,
                    selected: impl Fn(&mut QueryBuilder<Db>),
                    what: &'static str,
                ) -> Result<u64, StoreError> {
                    let _writes = self.lock_writes().await;
                    let mut tx = self.pool.begin().await.map_err(db_error("begin"))?;
                    let deleted = async {
                        let mut count = 0;
                        for (table, key) in Self::MEMORY_TABLES {
                            let mut q = QueryBuilder::<Db>::new("DELETE FROM ");
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

            /// Inserts or replaces `memory` with its tags and index entry,
            /// inside a transaction; `None` if its id is taken in another scope.
            async fn put(
                conn: &mut Conn,
                memory: &MemoryItem,
                tags: String,
                metadata: String,
            ) -> Result<Option<MemoryItem>, StoreError> {
                let scope = memory.scope.key();
                let existing: Option<(i64, String, i64, Option<i64>)> =
                    sqlx::query_as(sql::MEMORY_BY_ID)
                        .bind(memory.id.as_str())
                        .fetch_optional(&mut *conn)
                        .await
                        .map_err(db_error("read memory"))?;
                let mut stored = memory.clone();
                let (pk, replaced) = match existing {
                    Some((_, other, _, _)) if other != scope => return Ok(None),
                    Some((pk, _, access_count, last_accessed)) => {
                        stored.access_count = u32::try_from(access_count).unwrap_or(u32::MAX);
                        stored.last_accessed = last_accessed;
                        sqlx::query(sql::UPDATE_MEMORY)
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
                        // The tags are rewritten below.
                        sqlx::query(sql::DELETE_MEMORY_TAGS)
                            .bind(pk)
                            .execute(&mut *conn)
                            .await
                            .map_err(db_error("write memory"))?;
                        (pk, true)
                    }
                    None => {
                        let (pk,): (i64,) = sqlx::query_as(<$store>::INSERT_MEMORY)
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
                        (pk, false)
                    }
                };
                <$store>::index_memory(&mut *conn, pk, memory, replaced).await?;
                for tag in &memory.tags {
                    sqlx::query(sql::INSERT_MEMORY_TAG)
                        .bind(pk)
                        .bind(tag)
                        .execute(&mut *conn)
                        .await
                        .map_err(db_error("write memory tags"))?;
                }
                Ok(Some(stored))
            }

            /// ` AND m.scope IN (...)`.
            fn push_scopes(q: &mut QueryBuilder<Db>, scopes: &[MemoryScope]) {
                q.push(" AND m.scope IN (");
                let mut list = q.separated(", ");
                for scope in scopes {
                    list.push_bind(scope.key());
                }
                q.push(")");
            }
        };
    };
}

/// One memory's columns (see `sql::SEARCH_MEMORIES`).
#[derive(sqlx::FromRow)]
pub(crate) struct MemoryRow {
    id: String,
    scope: String,
    memory_type: String,
    importance: f64,
    created_at: i64,
    access_count: i64,
    last_accessed: Option<i64>,
    content: String,
    tags: String,
    metadata: String,
}

/// A row of a search: the memory and how many rows matched in all.
#[derive(sqlx::FromRow)]
pub(crate) struct SearchRow {
    #[sqlx(flatten)]
    pub(crate) memory: MemoryRow,
    pub(crate) total: i64,
}

/// A memory type stored as `name`; `what` says where, for the error.
pub(crate) fn parse_type(name: &str, what: &str) -> Result<MemoryType, StoreError> {
    MemoryType::parse(name)
        .ok_or_else(|| StoreError::Corrupt(format!("memory type {name:?} {what}")))
}

/// Rebuilds a memory from its columns; bad JSON or names are [`StoreError::Corrupt`].
pub(crate) fn decode(row: MemoryRow) -> Result<MemoryItem, StoreError> {
    let MemoryRow {
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
    } = row;
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

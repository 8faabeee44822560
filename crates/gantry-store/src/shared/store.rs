//! `impl_store!`: the [`Store`](crate::Store) port's reads and its small
//! writes (providers, settings, agents), one statement each.

/// `impl Store for $store`: every method but `commit`, `delete_thread` and
/// `compact`, which call the backend's own `write::commit`,
/// `delete::delete_thread` and `compact::compact`.
/// Also gives the store `forget_thread`, the part of deleting a thread
/// both backends share. See the module `shared` for what the expansion
/// site provides.
macro_rules! impl_store {
    ($store:ty) => {
        const _: () = {
            use async_trait::async_trait;
            use gantry_types::memory::MemoryScope;
            use gantry_types::{Agent, AgentId, Event, ProviderConfig, Thread, ThreadId};

            use $crate::codec::status_name;
            use $crate::page::{check_cursor, page_limit};
            use $crate::shared::{db_error, rows};
            use $crate::sql::{self, ThreadKey};
            use $crate::{Commit, Store, StoreError, ThreadPage, ThreadQuery};

            #[async_trait]
            impl Store for $store {
                async fn commit(&self, commit: &Commit) -> Result<u64, StoreError> {
                    write::commit(self, commit).await
                }

                async fn events(
                    &self,
                    thread: &ThreadId,
                    from_seq: u64,
                ) -> Result<Vec<Event>, StoreError> {
                    // Above every storable seq: there is nothing.
                    let Ok(from) = i64::try_from(from_seq) else {
                        return Ok(Vec::new());
                    };
                    let rows: Vec<rows::EventCols> = sqlx::query_as(sql::THREAD_EVENTS)
                        .bind(thread.as_str())
                        .bind(from)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_error("read events"))?;
                    rows::events(thread, rows, &self.sealer)
                }

                async fn events_after(
                    &self,
                    after: u64,
                    limit: usize,
                ) -> Result<Vec<Event>, StoreError> {
                    let Ok(after) = i64::try_from(after) else {
                        return Ok(Vec::new());
                    };
                    let rows: Vec<rows::AllEventCols> = sqlx::query_as(sql::EVENTS_AFTER)
                        .bind(after)
                        .bind(rows::count_i64(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_error("read events"))?;
                    Ok(rows::events_after(rows, &self.sealer))
                }

                async fn last_cursor(&self) -> Result<u64, StoreError> {
                    let (last,): (i64,) = sqlx::query_as(sql::LAST_CURSOR)
                        .fetch_one(&self.pool)
                        .await
                        .map_err(db_error("read the last cursor"))?;
                    Ok(u64::try_from(last).unwrap_or(0))
                }

                async fn thread(&self, id: &ThreadId) -> Result<Option<Thread>, StoreError> {
                    let row: Option<rows::DataRow> = sqlx::query_as(sql::THREAD)
                        .bind(id.as_str())
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db_error("read thread"))?;
                    row.map(|row| rows::thread(&row, &self.sealer)).transpose()
                }

                async fn list_threads(
                    &self,
                    query: &ThreadQuery,
                ) -> Result<ThreadPage, StoreError> {
                    let limit = page_limit(query.limit);
                    let cursor = query.cursor.as_deref().map(check_cursor).transpose()?;
                    // One more row than the page says whether more exist.
                    let fetch = rows::count_i64(limit + 1);
                    let select = match (query.archived, cursor) {
                        (None, None) => sqlx::query_as(sql::LIST_ALL).bind(fetch),
                        (None, Some(after)) => {
                            sqlx::query_as(sql::LIST_ALL_AFTER).bind(after).bind(fetch)
                        }
                        (Some(archived), None) => sqlx::query_as(sql::LIST_ARCHIVED)
                            .bind(archived)
                            .bind(fetch),
                        (Some(archived), Some(after)) => sqlx::query_as(sql::LIST_ARCHIVED_AFTER)
                            .bind(archived)
                            .bind(after)
                            .bind(fetch),
                    };
                    let rows: Vec<rows::DataRow> = select
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_error("list threads"))?;
                    Ok(rows::thread_page(&rows, limit, &self.sealer))
                }

                async fn delete_thread(&self, id: &ThreadId) -> Result<bool, StoreError> {
                    delete::delete_thread(self, id).await
                }

                async fn running_threads(&self) -> Result<Vec<ThreadId>, StoreError> {
                    let ids: Vec<(String,)> = sqlx::query_as(sql::THREADS_WITH_STATUS)
                        .bind(status_name(gantry_types::ThreadStatus::Running))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_error("running threads"))?;
                    Ok(ids.into_iter().map(|(id,)| ThreadId(id)).collect())
                }

                async fn providers(&self) -> Result<Vec<ProviderConfig>, StoreError> {
                    let rows: Vec<rows::DataRow> = sqlx::query_as(sql::PROVIDERS)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_error("read providers"))?;
                    rows.iter()
                        .map(|row| rows::provider(row, &self.sealer))
                        .collect()
                }

                async fn put_provider(&self, provider: &ProviderConfig) -> Result<(), StoreError> {
                    let data = serde_json::to_string(provider).map_err(|e| {
                        StoreError::Database(format!("provider {}: encode: {e}", provider.name))
                    })?;
                    let data = self.sealer.seal_json(data)?;
                    let _writes = self.lock_writes().await;
                    sqlx::query(sql::UPSERT_PROVIDER)
                        .bind(&provider.name)
                        .bind(data)
                        .execute(&self.pool)
                        .await
                        .map_err(db_error("write provider"))?;
                    Ok(())
                }

                async fn delete_provider(&self, name: &str) -> Result<bool, StoreError> {
                    let _writes = self.lock_writes().await;
                    let done = sqlx::query(sql::DELETE_PROVIDER)
                        .bind(name)
                        .execute(&self.pool)
                        .await
                        .map_err(db_error("delete provider"))?;
                    Ok(done.rows_affected() > 0)
                }

                async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
                    let row: Option<(String,)> = sqlx::query_as(sql::SETTING)
                        .bind(key)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db_error("read setting"))?;
                    Ok(row.map(|(value,)| value))
                }

                async fn thread_key(&self, id: &ThreadId) -> Result<Option<String>, StoreError> {
                    let sealed = self.setting(&crate::thread_key_setting(id)).await?;
                    // A value that does not open (the key file was replaced)
                    // is dropped, as a provider's is.
                    Ok(sealed.and_then(|v| self.sealer.open(&v)))
                }

                async fn put_thread_key(
                    &self,
                    id: &ThreadId,
                    key: Option<&str>,
                ) -> Result<(), StoreError> {
                    // Empty: no key (and nothing to seal).
                    let sealed = key.map(|k| self.sealer.seal(k)).transpose()?;
                    let value = sealed.as_deref().unwrap_or_default();
                    self.put_setting(&crate::thread_key_setting(id), value)
                        .await
                }

                async fn put_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
                    let _writes = self.lock_writes().await;
                    sqlx::query(sql::UPSERT_SETTING)
                        .bind(key)
                        .bind(value)
                        .execute(&self.pool)
                        .await
                        .map_err(db_error("write setting"))?;
                    Ok(())
                }

                async fn agents(&self) -> Result<Vec<Agent>, StoreError> {
                    let rows: Vec<rows::DataRow> = sqlx::query_as(sql::AGENTS)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_error("read agents"))?;
                    rows.iter().map(rows::agent).collect()
                }

                async fn agent(&self, id: &AgentId) -> Result<Option<Agent>, StoreError> {
                    let row: Option<rows::DataRow> = sqlx::query_as(sql::AGENT)
                        .bind(id.as_str())
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db_error("read agent"))?;
                    row.as_ref().map(rows::agent).transpose()
                }

                async fn put_agent(&self, agent: &Agent) -> Result<(), StoreError> {
                    let data = serde_json::to_string(agent).map_err(|e| {
                        StoreError::Database(format!("agent {}: encode: {e}", agent.id))
                    })?;
                    let _writes = self.lock_writes().await;
                    sqlx::query(sql::UPSERT_AGENT)
                        .bind(agent.id.as_str())
                        .bind(data)
                        .execute(&self.pool)
                        .await
                        .map_err(db_error("write agent"))?;
                    Ok(())
                }

                async fn delete_agent(&self, id: &AgentId) -> Result<bool, StoreError> {
                    let _writes = self.lock_writes().await;
                    let done = sqlx::query(sql::DELETE_AGENT)
                        .bind(id.as_str())
                        .execute(&self.pool)
                        .await
                        .map_err(db_error("delete agent"))?;
                    Ok(done.rows_affected() > 0)
                }

                async fn compact(
                    &self,
                    request: $crate::CompactRequest,
                ) -> Result<$crate::Compaction, StoreError> {
                    compact::compact(self, request).await
                }
            }

            impl $store {
                /// Deletes the thread `id`'s rows inside the caller's
                /// transaction, remembering `last`, the last cursor given, so
                /// the cursors of its events (the newest ones, maybe) are
                /// never given again, even after a restart. `index` deletes
                /// the rows of a full-text index kept apart from the memories
                /// (bound to the thread's memory scope), if any. False if
                /// nothing of the thread was stored.
                pub(crate) async fn forget_thread(
                    conn: &mut Conn,
                    id: &ThreadId,
                    last: i64,
                    index: Option<&'static str>,
                ) -> Result<bool, StoreError> {
                    sqlx::query(sql::UPSERT_SETTING)
                        .bind(sql::DELETED_CURSOR)
                        .bind(last.to_string())
                        .execute(&mut *conn)
                        .await
                        .map_err(db_error("remember the last cursor"))?;
                    let scope = MemoryScope::Thread(id.clone()).key();
                    let api_key = crate::thread_key_setting(id);
                    let index = index.map(|statement| (statement, ThreadKey::Scope));
                    let mut found = false;
                    for (statement, key) in index.into_iter().chain(sql::DELETE_THREAD) {
                        let value = match key {
                            ThreadKey::Scope => scope.as_str(),
                            ThreadKey::Id => id.as_str(),
                            ThreadKey::ApiKey => api_key.as_str(),
                        };
                        let done = sqlx::query(statement)
                            .bind(value)
                            .execute(&mut *conn)
                            .await
                            .map_err(db_error("delete thread"))?;
                        found |= matches!(key, ThreadKey::Id) && done.rows_affected() > 0;
                    }
                    Ok(found)
                }
            }
        };
    };
}

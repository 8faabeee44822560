//! The Rust both SQL backends run unchanged, as macros expanded in each:
//! sqlx types a query by its database, so one function cannot serve a
//! SQLite and a PostgreSQL connection without a wall of trait bounds, while
//! the text below is the same for both. Where a backend differs (how it
//! serializes writers) it says so in its own module.
//!
//! The expansion site provides: `self.pool` (the backend's pool),
//! `self.execute(what, query)` (runs one write statement, returns the rows
//! it affected), `self.tokens` (its [`super::token_stamp::TokenCache`]), and the
//! type aliases `Db` (its database), `Conn` (its connection) and `Args`
//! (its query arguments).

/// `impl ControlPlaneStore for $store`: the methods that are one statement
/// each (reads and single writes) written here, then the backend's
/// own (`apply` and `write`, which differ in how writers are serialized).
/// The whole impl is generated so `#[async_trait]` sees every method.
macro_rules! impl_control_plane_store {
    ($store:ty, { $($own:tt)* }) => {
        #[async_trait]
        impl ControlPlaneStore for $store {
            async fn add_runner(&self, runner: &RunnerRecord) -> Result<(), StoreError> {
                let query = sqlx::query(sql::INSERT_RUNNER)
                    .bind(&runner.id)
                    .bind(&runner.name)
                    .bind(&runner.token_hash)
                    .bind(&runner.sdks)
                    .bind(runner.created_at)
                    .bind(runner.registered_at)
                    .bind(&runner.protocol);
                self.execute("add runner", query).await.map(drop)
            }

            async fn runners(&self) -> Result<Vec<RunnerRecord>, StoreError> {
                sqlx::query_as(sql::RUNNERS)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read runners"))
            }

            async fn runner_by_name(&self, name: &str) -> Result<Option<RunnerRecord>, StoreError> {
                sqlx::query_as(sql::RUNNER_BY_NAME)
                    .bind(name)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_error("read runner"))
            }

            async fn set_runner_sdks(
                &self,
                id: &str,
                sdks: &str,
                at: i64,
            ) -> Result<(), StoreError> {
                let query = sqlx::query(sql::SET_RUNNER_SDKS)
                    .bind(id)
                    .bind(sdks)
                    .bind(at);
                self.execute("record registration", query).await.map(drop)
            }

            async fn add_api_token(&self, token: &ApiTokenRecord) -> Result<(), StoreError> {
                let query = sqlx::query(sql::INSERT_API_TOKEN)
                    .bind(&token.id)
                    .bind(&token.name)
                    .bind(&token.token_hash)
                    .bind(token.created_at)
                    .bind(token.read_only);
                self.execute("add API token", query).await?;
                self.tokens.changed()
            }

            async fn api_tokens(&self) -> Result<Vec<ApiTokenRecord>, StoreError> {
                // Taken before the read: a change meanwhile shows next time.
                let stamp = self.tokens.stamp();
                if let Some(kept) = self.tokens.kept(stamp) {
                    return Ok(kept);
                }
                let tokens: Vec<ApiTokenRecord> = sqlx::query_as(sql::API_TOKENS)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read API tokens"))?;
                self.tokens.keep(stamp, &tokens);
                Ok(tokens)
            }

            async fn revoke_api_token(&self, name: &str) -> Result<bool, StoreError> {
                let query = sqlx::query(sql::DELETE_API_TOKEN).bind(name);
                let revoked = self.execute("revoke API token", query).await? > 0;
                if revoked {
                    self.tokens.changed()?;
                }
                Ok(revoked)
            }

            async fn cluster_secret(&self, candidate: &str) -> Result<String, StoreError> {
                let query = sqlx::query(sql::INSERT_CLUSTER_SECRET).bind(candidate);
                self.execute("keep the replicas' secret", query).await?;
                sqlx::query_scalar(sql::CLUSTER_SECRET)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_error("read the replicas' secret"))
            }

            async fn runner_loads(&self) -> Result<Vec<RunnerLoad>, StoreError> {
                sqlx::query_as(sql::RUNNER_LOADS)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read runner loads"))
            }

            async fn put_agent(&self, agent: &AgentRecord) -> Result<(), StoreError> {
                let mut query =
                    rows_query(&sql::AGENT_ROWS, std::slice::from_ref(agent), bind_agent);
                self.execute("write agent", query.build()).await.map(drop)
            }

            async fn agent(&self, id: &str) -> Result<Option<AgentRecord>, StoreError> {
                sqlx::query_as(sql::AGENT)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_error("read agent"))
            }

            async fn agents(&self) -> Result<Vec<AgentRecord>, StoreError> {
                sqlx::query_as(sql::AGENTS)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read agents"))
            }

            async fn put_skill(&self, skill: &SkillRecord) -> Result<(), StoreError> {
                let mut query =
                    rows_query(&sql::SKILL_ROWS, std::slice::from_ref(skill), bind_skill);
                self.execute("write skill", query.build()).await.map(drop)
            }

            async fn skills(&self, agent_id: &str) -> Result<Vec<SkillRecord>, StoreError> {
                sqlx::query_as(sql::SKILLS)
                    .bind(agent_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read skills"))
            }

            async fn put_request(&self, request: &RequestRecord) -> Result<(), StoreError> {
                let mut query =
                    rows_query(&sql::REQUEST_ROWS, std::slice::from_ref(request), bind_request);
                self.execute("write request", query.build()).await.map(drop)
            }

            async fn request(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
                sqlx::query_as(sql::REQUEST)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_error("read request"))
            }

            async fn thread(&self, id: &str) -> Result<Option<ThreadRecord>, StoreError> {
                sqlx::query_as(sql::THREAD)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_error("read thread"))
            }

            async fn threads_of_agent(
                &self,
                agent_id: &str,
            ) -> Result<Vec<ThreadRecord>, StoreError> {
                sqlx::query_as(sql::THREADS_OF_AGENT)
                    .bind(agent_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read threads"))
            }

            async fn turns(&self, thread_id: &str) -> Result<Vec<TurnRecord>, StoreError> {
                sqlx::query_as(sql::TURNS)
                    .bind(thread_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read turns"))
            }

            async fn turn_ids(
                &self,
                thread_id: &str,
                limit: usize,
            ) -> Result<Vec<String>, StoreError> {
                sqlx::query_scalar(sql::TURN_IDS)
                    .bind(thread_id)
                    .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read turn ids"))
            }

            async fn turn(
                &self,
                thread_id: &str,
                id: &str,
            ) -> Result<Option<TurnRecord>, StoreError> {
                sqlx::query_as(sql::TURN)
                    .bind(thread_id)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_error("read turn"))
            }

            async fn items(&self, thread_id: &str) -> Result<Vec<ItemRecord>, StoreError> {
                sqlx::query_as(sql::ITEMS)
                    .bind(thread_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read items"))
            }

            async fn item(
                &self,
                thread_id: &str,
                id: &str,
            ) -> Result<Option<ItemRecord>, StoreError> {
                sqlx::query_as(sql::ITEM)
                    .bind(thread_id)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_error("read item"))
            }

            async fn ping(&self) -> Result<(), StoreError> {
                sqlx::query("SELECT 1")
                    .execute(&self.pool)
                    .await
                    .map_err(db_error("ping"))?;
                Ok(())
            }

            async fn last_seq(&self, thread_id: &str) -> Result<i64, StoreError> {
                let (last,): (i64,) = sqlx::query_as(sql::LAST_SEQ)
                    .bind(thread_id)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_error("read last seq"))?;
                Ok(last)
            }

            async fn thread_updates(
                &self,
                thread_id: &str,
                after: i64,
                limit: i64,
            ) -> Result<Vec<ThreadUpdateRecord>, StoreError> {
                sqlx::query_as(sql::UPDATES_AFTER)
                    .bind(thread_id)
                    .bind(after)
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read thread updates"))
            }

            $($own)*
        }
    };
}

/// The functions that build a batch's statements and run them on one
/// connection, inside the caller's transaction. Expanded at the backend's
/// module level.
macro_rules! batch_functions {
    () => {
        /// One statement writing `rows` of a table shaped by `shape`, each
        /// bound by `bind` (a row's values in the shape's column order).
        /// Only a one-row statement is prepared once and kept: the text of
        /// a many-row one varies with its length.
        fn rows_query<T>(
            shape: &sql::Rows,
            rows: &[T],
            bind: fn(&mut sqlx::query_builder::Separated<'_, Db, &'static str>, &T),
        ) -> sqlx::QueryBuilder<Db> {
            let mut builder = sqlx::QueryBuilder::new(shape.insert);
            builder.push_values(rows, |mut row, value| bind(&mut row, value));
            builder.push(shape.conflict);
            builder
        }

        /// Writes `rows` with as few statements as the bind limit allows.
        async fn write_rows<T>(
            conn: &mut Conn,
            what: &str,
            shape: &sql::Rows,
            rows: &[T],
            bind: fn(&mut sqlx::query_builder::Separated<'_, Db, &'static str>, &T),
        ) -> Result<(), StoreError> {
            for chunk in rows.chunks(shape.per_statement()) {
                rows_query(shape, chunk, bind)
                    .build()
                    .persistent(chunk.len() == 1)
                    .execute(&mut *conn)
                    .await
                    .map_err(db_error(what))?;
            }
            Ok(())
        }

        fn bind_agent(
            row: &mut sqlx::query_builder::Separated<'_, Db, &'static str>,
            a: &AgentRecord,
        ) {
            row.push_bind(a.id.clone())
                .push_bind(a.runner_id.clone())
                .push_bind(a.sdk.clone())
                .push_bind(a.model.clone())
                .push_bind(a.status.clone())
                .push_bind(a.created_at)
                .push_bind(a.updated_at);
        }

        fn bind_skill(
            row: &mut sqlx::query_builder::Separated<'_, Db, &'static str>,
            s: &SkillRecord,
        ) {
            row.push_bind(s.agent_id.clone())
                .push_bind(s.package_name.clone())
                .push_bind(s.status.clone())
                .push_bind(s.updated_at);
        }

        fn bind_request(
            row: &mut sqlx::query_builder::Separated<'_, Db, &'static str>,
            r: &RequestRecord,
        ) {
            row.push_bind(r.id.clone())
                .push_bind(r.runner_id.clone())
                .push_bind(r.kind.clone())
                .push_bind(r.agent_id.clone())
                .push_bind(r.thread_id.clone())
                .push_bind(r.turn_id.clone())
                .push_bind(r.params.clone())
                .push_bind(r.created_at);
        }

        fn bind_thread(
            row: &mut sqlx::query_builder::Separated<'_, Db, &'static str>,
            t: &ThreadRecord,
        ) {
            row.push_bind(t.id.clone())
                .push_bind(t.agent_id.clone())
                .push_bind(t.runner_id.clone())
                .push_bind(t.model.clone())
                .push_bind(t.reasoning_level.clone())
                .push_bind(t.status.clone())
                .push_bind(t.created_at)
                .push_bind(t.updated_at)
                .push_bind(t.name.clone())
                .push_bind(t.token_usage.clone())
                .push_bind(t.mcp_servers.clone());
        }

        fn bind_turn(
            row: &mut sqlx::query_builder::Separated<'_, Db, &'static str>,
            t: &TurnRecord,
        ) {
            row.push_bind(t.thread_id.clone())
                .push_bind(t.id.clone())
                .push_bind(t.request_id.clone())
                .push_bind(t.status.clone())
                .push_bind(t.first_seq)
                .push_bind(t.created_at)
                .push_bind(t.updated_at);
        }

        fn bind_item(
            row: &mut sqlx::query_builder::Separated<'_, Db, &'static str>,
            i: &ItemRecord,
        ) {
            row.push_bind(i.thread_id.clone())
                .push_bind(i.id.clone())
                .push_bind(i.turn_id.clone())
                .push_bind(i.item_type.clone())
                .push_bind(i.status.clone())
                .push_bind(i.text.clone())
                .push_bind(i.command.clone())
                .push_bind(i.first_seq)
                .push_bind(i.created_at)
                .push_bind(i.updated_at);
        }

        fn bind_update(
            row: &mut sqlx::query_builder::Separated<'_, Db, &'static str>,
            u: &ThreadUpdateRecord,
        ) {
            row.push_bind(u.thread_id.clone())
                .push_bind(u.seq)
                .push_bind(u.ts)
                .push_bind(u.kind.clone())
                .push_bind(u.data.clone());
        }

        /// Maps a driver error, naming the operation that failed.
        fn db_error(what: &str) -> impl FnOnce(sqlx::Error) -> StoreError + '_ {
            move |e| StoreError::Database(format!("{what}: {e}"))
        }

        /// The body of [`ControlPlaneStore::apply`], inside its transaction
        /// (which keeps other writers of the thread out).
        async fn apply_in(
            conn: &mut Conn,
            change: &ThreadChange,
        ) -> Result<ThreadUpdateRecord, StoreError> {
            let (last,): (i64,) = sqlx::query_as(sql::LAST_SEQ)
                .bind(&change.thread_id)
                .fetch_one(&mut *conn)
                .await
                .map_err(db_error("read last seq"))?;
            let write = Write::Change {
                seq: last + 1,
                change: change.clone(),
            };
            let mut entries = write_all_in(conn, std::slice::from_ref(&write)).await?;
            entries
                .pop()
                .ok_or_else(|| StoreError::Database("a change wrote no log entry".to_owned()))
        }

        /// Every write of a batch inside its transaction, table by table
        /// (in the order their foreign keys need), each in as few
        /// statements as it can; returns the log entries of its thread
        /// changes, in order.
        async fn write_all_in(
            conn: &mut Conn,
            batch: &[Write],
        ) -> Result<Vec<ThreadUpdateRecord>, StoreError> {
            let rows = super::group::Grouped::of(batch);
            write_rows(
                conn,
                "write agents",
                &sql::AGENT_ROWS,
                &rows.agents,
                bind_agent,
            )
            .await?;
            write_rows(
                conn,
                "write skills",
                &sql::SKILL_ROWS,
                &rows.skills,
                bind_skill,
            )
            .await?;
            write_rows(
                conn,
                "write threads",
                &sql::THREAD_ROWS,
                &rows.threads,
                bind_thread,
            )
            .await?;
            write_rows(
                conn,
                "write requests",
                &sql::REQUEST_ROWS,
                &rows.requests,
                bind_request,
            )
            .await?;
            write_rows(conn, "write turns", &sql::TURN_ROWS, &rows.turns, bind_turn).await?;
            write_rows(conn, "write items", &sql::ITEM_ROWS, &rows.items, bind_item).await?;
            write_rows(
                conn,
                "append thread updates",
                &sql::UPDATE_ROWS,
                &rows.updates,
                bind_update,
            )
            .await?;
            Ok(rows.updates)
        }
    };
}

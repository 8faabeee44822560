//! The Rust both SQL backends run unchanged, as macros expanded in each:
//! sqlx types a query by its database, so one function cannot serve a
//! SQLite and a PostgreSQL connection without a wall of trait bounds, while
//! the text below is the same for both. Where a backend differs (how it
//! serializes writers) it says so in its own module.
//!
//! The expansion site provides: `self.pool` (the backend's pool),
//! `self.execute(what, query)` (runs one write statement, returns the rows
//! it affected), and the
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
                self.execute("add API token", query).await.map(drop)
            }

            async fn api_tokens(&self) -> Result<Vec<ApiTokenRecord>, StoreError> {
                sqlx::query_as(sql::API_TOKENS)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read API tokens"))
            }

            async fn revoke_api_token(&self, name: &str) -> Result<bool, StoreError> {
                let query = sqlx::query(sql::DELETE_API_TOKEN).bind(name);
                Ok(self.execute("revoke API token", query).await? > 0)
            }

            async fn runner_loads(&self) -> Result<Vec<RunnerLoad>, StoreError> {
                sqlx::query_as(sql::RUNNER_LOADS)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read runner loads"))
            }

            async fn put_agent(&self, agent: &AgentRecord) -> Result<(), StoreError> {
                self.execute("write agent", agent_query(agent))
                    .await
                    .map(drop)
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
                self.execute("write skill", skill_query(skill))
                    .await
                    .map(drop)
            }

            async fn skills(&self, agent_id: &str) -> Result<Vec<SkillRecord>, StoreError> {
                sqlx::query_as(sql::SKILLS)
                    .bind(agent_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("read skills"))
            }

            async fn put_request(&self, request: &RequestRecord) -> Result<(), StoreError> {
                self.execute("write request", request_query(request))
                    .await
                    .map(drop)
            }

            async fn request(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
                sqlx::query_as(sql::REQUEST)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_error("read request"))
            }

            async fn link_request(
                &self,
                id: &str,
                thread_id: Option<&str>,
                turn_id: Option<&str>,
            ) -> Result<(), StoreError> {
                let query = sqlx::query(sql::LINK_REQUEST)
                    .bind(id)
                    .bind(thread_id)
                    .bind(turn_id);
                self.execute("link request", query).await.map(drop)
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

            async fn close(&self) {
                self.pool.close().await;
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
        /// Records a request; an existing id is left as it is.
        fn request_query(request: &RequestRecord) -> Query<'_, Db, Args> {
            sqlx::query(sql::INSERT_REQUEST)
                .bind(&request.id)
                .bind(&request.runner_id)
                .bind(&request.kind)
                .bind(&request.agent_id)
                .bind(&request.thread_id)
                .bind(&request.turn_id)
                .bind(&request.params)
                .bind(request.created_at)
        }

        /// Inserts or updates an agent.
        fn agent_query(agent: &AgentRecord) -> Query<'_, Db, Args> {
            sqlx::query(sql::UPSERT_AGENT)
                .bind(&agent.id)
                .bind(&agent.runner_id)
                .bind(&agent.sdk)
                .bind(&agent.model)
                .bind(&agent.status)
                .bind(agent.created_at)
                .bind(agent.updated_at)
        }

        /// Inserts or updates a skill.
        fn skill_query(skill: &SkillRecord) -> Query<'_, Db, Args> {
            sqlx::query(sql::UPSERT_SKILL)
                .bind(&skill.agent_id)
                .bind(&skill.package_name)
                .bind(&skill.status)
                .bind(skill.updated_at)
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
            change_in(conn, last + 1, change).await
        }

        /// Every write of a batch, in order, inside its transaction;
        /// returns the log entries of its thread changes.
        async fn write_all_in(
            conn: &mut Conn,
            batch: &[Write],
        ) -> Result<Vec<ThreadUpdateRecord>, StoreError> {
            let mut entries = Vec::new();
            for write in batch {
                write_in(conn, write, &mut entries).await?;
            }
            Ok(entries)
        }

        /// One write of a batch; a thread change's log entry is added to
        /// `entries`.
        async fn write_in(
            conn: &mut Conn,
            write: &Write,
            entries: &mut Vec<ThreadUpdateRecord>,
        ) -> Result<(), StoreError> {
            let (what, query) = match write {
                Write::Change { seq, change } => {
                    entries.push(change_in(conn, *seq, change).await?);
                    return Ok(());
                }
                Write::Request(r) => ("write request", request_query(r)),
                Write::LinkRequest {
                    id,
                    thread_id,
                    turn_id,
                } => (
                    "link request",
                    sqlx::query(sql::LINK_REQUEST)
                        .bind(id)
                        .bind(thread_id)
                        .bind(turn_id),
                ),
                Write::Agent(a) => ("write agent", agent_query(a)),
                Write::Skill(s) => ("write skill", skill_query(s)),
            };
            query.execute(&mut *conn).await.map_err(db_error(what))?;
            Ok(())
        }

        /// Writes a thread change's row and its log entry with `seq`.
        async fn change_in(
            conn: &mut Conn,
            seq: i64,
            change: &ThreadChange,
        ) -> Result<ThreadUpdateRecord, StoreError> {
            upsert(conn, &change.upsert, seq).await?;
            sqlx::query(sql::INSERT_UPDATE)
                .bind(&change.thread_id)
                .bind(seq)
                .bind(change.ts)
                .bind(&change.kind)
                .bind(&change.data)
                .execute(&mut *conn)
                .await
                .map_err(db_error("append thread update"))?;
            Ok(ThreadUpdateRecord {
                thread_id: change.thread_id.clone(),
                seq,
                ts: change.ts,
                kind: change.kind.clone(),
                data: change.data.clone(),
            })
        }

        /// Writes the row of a change; `seq` becomes a new turn's or item's
        /// first seq.
        async fn upsert(conn: &mut Conn, row: &Upsert, seq: i64) -> Result<(), StoreError> {
            let query = match row {
                Upsert::Thread(t) => sqlx::query(sql::UPSERT_THREAD)
                    .bind(&t.id)
                    .bind(&t.agent_id)
                    .bind(&t.runner_id)
                    .bind(&t.model)
                    .bind(&t.reasoning_level)
                    .bind(&t.status)
                    .bind(t.created_at)
                    .bind(t.updated_at)
                    .bind(&t.name)
                    .bind(&t.token_usage)
                    .bind(&t.mcp_servers),
                Upsert::Turn(t) => sqlx::query(sql::UPSERT_TURN)
                    .bind(&t.thread_id)
                    .bind(&t.id)
                    .bind(&t.request_id)
                    .bind(&t.status)
                    .bind(seq)
                    .bind(t.created_at)
                    .bind(t.updated_at),
                Upsert::Item(i) => sqlx::query(sql::UPSERT_ITEM)
                    .bind(&i.thread_id)
                    .bind(&i.id)
                    .bind(&i.turn_id)
                    .bind(&i.item_type)
                    .bind(&i.status)
                    .bind(&i.text)
                    .bind(&i.command)
                    .bind(seq)
                    .bind(i.created_at)
                    .bind(i.updated_at),
                Upsert::Nothing => return Ok(()),
            };
            query
                .execute(&mut *conn)
                .await
                .map_err(db_error("write thread change"))?;
            Ok(())
        }
    };
}

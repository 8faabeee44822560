//! `impl_job_storage!`: [`JobStorage`](crate::JobStorage) on a SQL store,
//! one JSON row per job and per execution, with the columns that queries
//! filter on (name, job, start, status) beside it.

/// `impl JobStorage for $store`. See the module `shared` for what the
/// expansion site provides.
macro_rules! impl_job_storage {
    ($store:ty) => {
        const _: () = {
            use async_trait::async_trait;
            use gantry_types::cron::{CronExecution, CronJob, ExecutionStatus};

            use $crate::shared::{db_error, rows};
            use $crate::{JobStorage, StoreError, sql};

            #[async_trait]
            impl JobStorage for $store {
                async fn jobs(&self) -> Result<Vec<CronJob>, StoreError> {
                    let rows: Vec<rows::DataRow> = sqlx::query_as(sql::JOBS)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_error("read jobs"))?;
                    rows.iter().map(rows::job).collect()
                }

                async fn job(&self, id: &str) -> Result<Option<CronJob>, StoreError> {
                    self.one_job(sql::JOB, id).await
                }

                async fn job_by_name(&self, name: &str) -> Result<Option<CronJob>, StoreError> {
                    self.one_job(sql::JOB_BY_NAME, name).await
                }

                async fn put_job(&self, job: &CronJob) -> Result<(), StoreError> {
                    let data = serde_json::to_string(job).map_err(|e| {
                        StoreError::Database(format!("job {}: encode: {e}", job.id))
                    })?;
                    let _writes = self.lock_writes().await;
                    sqlx::query(sql::UPSERT_JOB)
                        .bind(&job.id)
                        .bind(&job.name)
                        .bind(data)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| {
                            StoreError::Database(format!("write job `{}`: {e}", job.name))
                        })?;
                    Ok(())
                }

                async fn delete_job(&self, id: &str) -> Result<bool, StoreError> {
                    let _writes = self.lock_writes().await;
                    let mut tx = self.pool.begin().await.map_err(db_error("delete job"))?;
                    sqlx::query(sql::DELETE_JOB_EXECUTIONS)
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_error("delete job history"))?;
                    let done = sqlx::query(sql::DELETE_JOB)
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_error("delete job"))?;
                    tx.commit().await.map_err(db_error("delete job"))?;
                    Ok(done.rows_affected() > 0)
                }

                async fn put_execution(&self, execution: &CronExecution) -> Result<(), StoreError> {
                    let data = serde_json::to_string(execution).map_err(|e| {
                        StoreError::Database(format!("execution {}: encode: {e}", execution.id))
                    })?;
                    let _writes = self.lock_writes().await;
                    sqlx::query(sql::UPSERT_EXECUTION)
                        .bind(&execution.id)
                        .bind(&execution.job_id)
                        .bind(execution.started_at)
                        .bind(rows::execution_status_name(execution.status))
                        .bind(data)
                        .execute(&self.pool)
                        .await
                        .map_err(|e| {
                            StoreError::Database(format!(
                                "write execution {} of job {}: {e}",
                                execution.id, execution.job_id
                            ))
                        })?;
                    Ok(())
                }

                async fn executions(
                    &self,
                    job_id: &str,
                    limit: usize,
                ) -> Result<Vec<CronExecution>, StoreError> {
                    let rows: Vec<rows::DataRow> = sqlx::query_as(sql::EXECUTIONS)
                        .bind(job_id)
                        .bind(rows::count_i64(limit))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_error("read job history"))?;
                    rows.iter().map(rows::execution).collect()
                }

                async fn unfinished_executions(&self) -> Result<Vec<CronExecution>, StoreError> {
                    let rows: Vec<rows::DataRow> = sqlx::query_as(sql::EXECUTIONS_WITH_STATUS)
                        .bind(rows::execution_status_name(ExecutionStatus::Running))
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db_error("read unfinished job runs"))?;
                    rows.iter().map(rows::execution).collect()
                }
            }

            impl $store {
                /// The job `statement` finds by `key` (its id or its name).
                async fn one_job(
                    &self,
                    statement: &'static str,
                    key: &str,
                ) -> Result<Option<CronJob>, StoreError> {
                    let row: Option<rows::DataRow> = sqlx::query_as(statement)
                        .bind(key)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db_error("read job"))?;
                    row.as_ref().map(rows::job).transpose()
                }
            }
        };
    };
}

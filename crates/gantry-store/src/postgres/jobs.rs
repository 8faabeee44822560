//! [`JobStorage`] on PostgreSQL: one JSON row per job and per execution, with
//! the columns that queries filter on (name, job, start, status) beside it.

use async_trait::async_trait;
use gantry_types::cron::{CronExecution, CronJob, ExecutionStatus};

use super::{PostgresStore, db_error};
use crate::{JobStorage, StoreError, sql};

#[async_trait]
impl JobStorage for PostgresStore {
    async fn jobs(&self) -> Result<Vec<CronJob>, StoreError> {
        let rows: Vec<(String, String)> = sqlx::query_as(sql::JOBS)
            .fetch_all(&self.pool)
            .await
            .map_err(db_error("read jobs"))?;
        rows.iter().map(|(id, data)| decode_job(id, data)).collect()
    }

    async fn job(&self, id: &str) -> Result<Option<CronJob>, StoreError> {
        self.one_job(sql::JOB, id).await
    }

    async fn job_by_name(&self, name: &str) -> Result<Option<CronJob>, StoreError> {
        self.one_job(sql::JOB_BY_NAME, name).await
    }

    async fn put_job(&self, job: &CronJob) -> Result<(), StoreError> {
        let data = serde_json::to_string(job)
            .map_err(|e| StoreError::Database(format!("job {}: encode: {e}", job.id)))?;
        sqlx::query(sql::UPSERT_JOB)
            .bind(&job.id)
            .bind(&job.name)
            .bind(data)
            .execute(&self.pool)
            .await
            .map_err(|e| StoreError::Database(format!("write job `{}`: {e}", job.name)))?;
        Ok(())
    }

    async fn delete_job(&self, id: &str) -> Result<bool, StoreError> {
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
        sqlx::query(sql::UPSERT_EXECUTION)
            .bind(&execution.id)
            .bind(&execution.job_id)
            .bind(execution.started_at)
            .bind(status_name(execution.status))
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
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows: Vec<(String, String)> = sqlx::query_as(sql::EXECUTIONS)
            .bind(job_id)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(db_error("read job history"))?;
        rows.iter()
            .map(|(id, data)| decode_execution(id, data))
            .collect()
    }

    async fn unfinished_executions(&self) -> Result<Vec<CronExecution>, StoreError> {
        let rows: Vec<(String, String)> = sqlx::query_as(sql::EXECUTIONS_WITH_STATUS)
            .bind(status_name(ExecutionStatus::Running))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error("read unfinished job runs"))?;
        rows.iter()
            .map(|(id, data)| decode_execution(id, data))
            .collect()
    }
}

impl PostgresStore {
    async fn one_job(
        &self,
        statement: &'static str,
        key: &str,
    ) -> Result<Option<CronJob>, StoreError> {
        let row: Option<(String, String)> = sqlx::query_as(statement)
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error("read job"))?;
        row.map(|(id, data)| decode_job(&id, &data)).transpose()
    }
}

/// The `status` column value of an execution status.
fn status_name(status: ExecutionStatus) -> &'static str {
    // Exhaustive on purpose: a new status must choose its stored name here.
    match status {
        ExecutionStatus::Running => "running",
        ExecutionStatus::Success => "success",
        ExecutionStatus::Failed => "failed",
        ExecutionStatus::Timeout => "timeout",
        ExecutionStatus::Cancelled => "cancelled",
    }
}

fn decode_job(id: &str, data: &str) -> Result<CronJob, StoreError> {
    let job: CronJob = serde_json::from_str(data)
        .map_err(|e| StoreError::Corrupt(format!("job {id}: data: {e}")))?;
    check_id("job", id, &job.id)?;
    Ok(job)
}

fn decode_execution(id: &str, data: &str) -> Result<CronExecution, StoreError> {
    let execution: CronExecution = serde_json::from_str(data)
        .map_err(|e| StoreError::Corrupt(format!("execution {id}: data: {e}")))?;
    check_id("execution", id, &execution.id)?;
    Ok(execution)
}

/// A row's JSON must hold the row's own id.
fn check_id(what: &str, row: &str, held: &str) -> Result<(), StoreError> {
    if row == held {
        Ok(())
    } else {
        Err(StoreError::Corrupt(format!(
            "{what} {row}: data holds {what} {held}"
        )))
    }
}

//! The scheduled-jobs part of the storage port: jobs and their run history.

use async_trait::async_trait;
use gantry_types::cron::{CronExecution, CronJob};

use crate::StoreError;

/// Scheduled jobs and their executions. Job names are unique; deleting a
/// job deletes its executions.
#[async_trait]
pub trait JobStorage: Send + Sync {
    /// Every job, by name.
    async fn jobs(&self) -> Result<Vec<CronJob>, StoreError>;

    /// The job with `id`.
    async fn job(&self, id: &str) -> Result<Option<CronJob>, StoreError>;

    /// The job named `name`.
    async fn job_by_name(&self, name: &str) -> Result<Option<CronJob>, StoreError>;

    /// Inserts or replaces the job with `job.id`. Fails if another job
    /// already has its name.
    async fn put_job(&self, job: &CronJob) -> Result<(), StoreError>;

    /// Deletes a job and its executions; false if there was none with that id.
    async fn delete_job(&self, id: &str) -> Result<bool, StoreError>;

    /// Inserts or replaces the execution with `execution.id`.
    async fn put_execution(&self, execution: &CronExecution) -> Result<(), StoreError>;

    /// A job's executions, newest first, at most `limit`.
    async fn executions(
        &self,
        job_id: &str,
        limit: usize,
    ) -> Result<Vec<CronExecution>, StoreError>;

    /// Executions of every job still marked running (left by a process
    /// that stopped while they ran), oldest first.
    async fn unfinished_executions(&self) -> Result<Vec<CronExecution>, StoreError>;
}

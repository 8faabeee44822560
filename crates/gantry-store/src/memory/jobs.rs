//! [`JobStorage`] in memory, with the SQLite store's rules: unique names,
//! executions only for existing jobs, history deleted with its job.

use std::collections::BTreeMap;
use std::sync::MutexGuard;

use async_trait::async_trait;
use gantry_types::cron::{CronExecution, CronJob, ExecutionStatus};

use super::MemoryStore;
use crate::{JobStorage, StoreError};

/// The in-memory store's jobs and their runs.
#[derive(Debug, Default)]
pub(super) struct JobTables {
    /// Jobs by id.
    jobs: BTreeMap<String, CronJob>,
    /// Executions by id.
    executions: BTreeMap<String, CronExecution>,
}

impl MemoryStore {
    fn job_tables(&self) -> MutexGuard<'_, JobTables> {
        // Every write below checks before it mutates, so a panicking holder
        // cannot have left the tables half-changed.
        self.jobs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl JobStorage for MemoryStore {
    async fn jobs(&self) -> Result<Vec<CronJob>, StoreError> {
        let mut jobs: Vec<CronJob> = self.job_tables().jobs.values().cloned().collect();
        jobs.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(jobs)
    }

    async fn job(&self, id: &str) -> Result<Option<CronJob>, StoreError> {
        Ok(self.job_tables().jobs.get(id).cloned())
    }

    async fn job_by_name(&self, name: &str) -> Result<Option<CronJob>, StoreError> {
        Ok(self
            .job_tables()
            .jobs
            .values()
            .find(|j| j.name == name)
            .cloned())
    }

    async fn put_job(&self, job: &CronJob) -> Result<(), StoreError> {
        let mut tables = self.job_tables();
        if tables
            .jobs
            .values()
            .any(|j| j.name == job.name && j.id != job.id)
        {
            return Err(StoreError::Database(format!(
                "write job `{}`: another job has that name",
                job.name
            )));
        }
        tables.jobs.insert(job.id.clone(), job.clone());
        Ok(())
    }

    async fn delete_job(&self, id: &str) -> Result<bool, StoreError> {
        let mut tables = self.job_tables();
        tables.executions.retain(|_, e| e.job_id != id);
        Ok(tables.jobs.remove(id).is_some())
    }

    async fn put_execution(&self, execution: &CronExecution) -> Result<(), StoreError> {
        let mut tables = self.job_tables();
        if !tables.jobs.contains_key(&execution.job_id) {
            return Err(StoreError::Database(format!(
                "write execution {} of job {}: no such job",
                execution.id, execution.job_id
            )));
        }
        tables
            .executions
            .insert(execution.id.clone(), execution.clone());
        Ok(())
    }

    async fn executions(
        &self,
        job_id: &str,
        limit: usize,
    ) -> Result<Vec<CronExecution>, StoreError> {
        let mut runs: Vec<CronExecution> = self
            .job_tables()
            .executions
            .values()
            .filter(|e| e.job_id == job_id)
            .cloned()
            .collect();
        runs.sort_by(|a, b| (b.started_at, &b.id).cmp(&(a.started_at, &a.id)));
        runs.truncate(limit);
        Ok(runs)
    }

    async fn unfinished_executions(&self) -> Result<Vec<CronExecution>, StoreError> {
        let mut runs: Vec<CronExecution> = self
            .job_tables()
            .executions
            .values()
            .filter(|e| e.status == ExecutionStatus::Running)
            .cloned()
            .collect();
        runs.sort_by(|a, b| (a.started_at, &a.id).cmp(&(b.started_at, &b.id)));
        Ok(runs)
    }
}

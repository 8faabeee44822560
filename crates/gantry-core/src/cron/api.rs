//! Scheduled jobs through the engine API (seed 001's `*CronJob*` rpcs):
//! create, get (by id or name), list, update, pause, resume, delete, run
//! now, history, parse a schedule, and start the scheduler.

use gantry_types::cron::{
    CronEvent, CronExecution, CronJob, DEFAULT_JOB_TIMEOUT_MS, ExecutionTrigger, JobAction,
    JobStatus,
};
use gantry_types::new_id;
use tokio_util::sync::CancellationToken;

use super::execute::execute;
use super::schedule::{ParsedSchedule, next_run_after, parse_schedule};
use super::scheduler::{self, SchedulerHandle};
use super::validate;
use crate::engine_events::EngineEventKind;
use crate::{Engine, EngineError};

/// How many runs [`Jobs::history`](crate::Jobs::history) returns when no limit is given.
pub const DEFAULT_HISTORY_LIMIT: u32 = 10;

/// Most runs [`Jobs::history`](crate::Jobs::history) returns at once.
const MAX_HISTORY_LIMIT: u32 = 1000;

/// A new job.
#[derive(Debug, Clone)]
pub struct NewJob {
    /// Unique name.
    pub name: String,
    /// Cron (5 fields, or 6 with seconds first) or English ("every day at 9am").
    pub schedule: String,
    /// What it runs.
    pub action: JobAction,
    /// Time limit of one run in ms; [`DEFAULT_JOB_TIMEOUT_MS`] when `None`.
    pub timeout_ms: Option<u64>,
}

/// Changes to a job; `None` keeps a field as it is.
#[derive(Debug, Clone, Default)]
pub struct JobUpdate {
    /// A new unique name.
    pub name: Option<String>,
    /// A new schedule (cron or English).
    pub schedule: Option<String>,
    /// A new action.
    pub action: Option<JobAction>,
    /// A new time limit in ms.
    pub timeout_ms: Option<u64>,
}

/// Scheduled jobs: create, change, pause, run now, history.
/// Get one from [`Engine::jobs`].
#[derive(Clone, Copy)]
pub struct Jobs<'e> {
    pub(crate) engine: &'e Engine,
}

impl Jobs<'_> {
    /// Creates a job, active from now: its first run is the schedule's next
    /// time. Publishes [`CronEvent::Created`].
    pub async fn create(self, job: NewJob) -> Result<CronJob, EngineError> {
        let name = validate::name(&job.name)?;
        let schedule = self.engine.jobs().parse_schedule(&job.schedule)?;
        let timeout_ms = validate::timeout_ms(job.timeout_ms.unwrap_or(DEFAULT_JOB_TIMEOUT_MS))?;
        let action = validate::action(self.engine, job.action).await?;
        let shared = &self.engine.shared;
        let _rows = shared.cron.rows.lock().await;
        self.engine.check_name_free(&name, None).await?;
        let now = shared.clock.now_ms();
        let job = CronJob {
            id: new_id(),
            name,
            next_run: next_run_after(&schedule.expression, now),
            schedule: schedule.expression,
            description: schedule.description,
            action,
            timeout_ms,
            status: JobStatus::Active,
            created_at: now,
            updated_at: now,
            last_run: None,
            run_count: 0,
            fail_count: 0,
        };
        shared.store.put_job(&job).await?;
        self.engine.job_changed(CronEvent::Created {
            job: Box::new(job.clone()),
        });
        Ok(job)
    }

    /// The job with `id`.
    pub async fn get(self, id: &str) -> Result<CronJob, EngineError> {
        let job = self.engine.shared.store.job(id).await?;
        self.engine.found(job, id)
    }

    /// The job named `name`.
    pub async fn by_name(self, name: &str) -> Result<CronJob, EngineError> {
        let job = self.engine.shared.store.job_by_name(name.trim()).await?;
        self.engine.found(job, name)
    }

    /// Every job, by name.
    pub async fn list(self) -> Result<Vec<CronJob>, EngineError> {
        let jobs = self.engine.shared.store.jobs().await?;
        Ok(jobs
            .into_iter()
            .map(|j| self.engine.with_live_status(j))
            .collect())
    }

    /// Changes a job. A new schedule (of an active job) moves its next run
    /// to the new schedule's next time. Publishes [`CronEvent::Updated`].
    pub async fn update(self, id: &str, update: JobUpdate) -> Result<CronJob, EngineError> {
        let name = update.name.as_deref().map(validate::name).transpose()?;
        let schedule = update
            .schedule
            .as_deref()
            .map(|s| self.engine.jobs().parse_schedule(s))
            .transpose()?;
        let timeout_ms = update.timeout_ms.map(validate::timeout_ms).transpose()?;
        let action = match update.action {
            Some(action) => Some(validate::action(self.engine, action).await?),
            None => None,
        };
        self.engine
            .change_job(id, |job, now| {
                if let Some(name) = name {
                    job.name = name;
                }
                if let Some(schedule) = schedule {
                    if job.status != JobStatus::Paused {
                        job.next_run = next_run_after(&schedule.expression, now);
                    }
                    job.schedule = schedule.expression;
                    job.description = schedule.description;
                }
                if let Some(timeout_ms) = timeout_ms {
                    job.timeout_ms = timeout_ms;
                }
                if let Some(action) = action {
                    job.action = action;
                }
            })
            .await
    }

    /// Pauses a job: the scheduler leaves it alone (a run in progress goes
    /// on; [`Jobs::run_now`](crate::Jobs::run_now) still works). Publishes [`CronEvent::Updated`].
    pub async fn pause(self, id: &str) -> Result<CronJob, EngineError> {
        self.engine
            .change_job(id, |job, _| {
                job.status = JobStatus::Paused;
                job.next_run = None;
            })
            .await
    }

    /// Resumes a paused job: its next run is the schedule's next time from
    /// now (runs missed while paused are not made up). Publishes
    /// [`CronEvent::Updated`].
    pub async fn resume(self, id: &str) -> Result<CronJob, EngineError> {
        self.engine
            .change_job(id, |job, now| {
                if job.status == JobStatus::Paused {
                    job.status = JobStatus::Active;
                    job.next_run = next_run_after(&job.schedule, now);
                }
            })
            .await
    }

    /// Deletes a job and its history; a run in progress is cancelled (its
    /// process group killed). Publishes [`CronEvent::Deleted`].
    pub async fn delete(self, id: &str) -> Result<(), EngineError> {
        let shared = &self.engine.shared;
        let _rows = shared.cron.rows.lock().await;
        let job = self.engine.found(shared.store.job(id).await?, id)?;
        shared.store.delete_job(id).await?;
        shared.cron.cancel(id);
        self.engine.job_changed(CronEvent::Deleted {
            job_id: job.id,
            name: job.name,
        });
        Ok(())
    }

    /// Runs a job now, whatever its status and schedule (its next scheduled
    /// run stays), and returns the finished run. Refused while the job is
    /// running. The run goes on if the caller stops waiting.
    pub async fn run_now(self, id: &str) -> Result<CronExecution, EngineError> {
        let job = self.engine.jobs().get(id).await?;
        let cancel = CancellationToken::new();
        let claim = self
            .engine
            .shared
            .cron
            .claim(&job.id, cancel.clone(), None)
            .ok_or_else(|| {
                EngineError::InvalidInput(format!(
                    "job `{}` is already running; wait for its run to end",
                    job.name
                ))
            })?;
        let run = tokio::spawn(execute(
            self.engine.clone(),
            job.id,
            ExecutionTrigger::Manual,
            cancel,
            claim,
        ));
        // A manual run always starts, so `None` cannot come back.
        run.await
            .map_err(|_| EngineError::ShuttingDown)??
            .ok_or(EngineError::ShuttingDown)
    }

    /// A job's runs, newest first: at most `limit` (default
    /// [`DEFAULT_HISTORY_LIMIT`], at most 1000).
    pub async fn history(
        &self,
        id: &str,
        limit: Option<u32>,
    ) -> Result<Vec<CronExecution>, EngineError> {
        let job = self.engine.jobs().get(id).await?;
        let limit = limit
            .filter(|l| *l > 0)
            .unwrap_or(DEFAULT_HISTORY_LIMIT)
            .min(MAX_HISTORY_LIMIT);
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        Ok(self.engine.shared.store.executions(&job.id, limit).await?)
    }

    /// Reads a schedule (cron or English) into its cron expression and a
    /// description in words, as jobs would store it.
    pub fn parse_schedule(self, input: &str) -> Result<ParsedSchedule, EngineError> {
        parse_schedule(input).map_err(EngineError::InvalidInput)
    }

    /// Starts the scheduler (`gantry serve` does): runs a stopped server
    /// left unfinished are closed as cancelled; each active job whose next
    /// run passed while no scheduler ran runs once; then jobs run on their
    /// schedules, never two runs of one job at once. Stops when the handle
    /// is dropped or [`SchedulerHandle::stop`]ped.
    pub async fn start_scheduler(self) -> Result<SchedulerHandle, EngineError> {
        scheduler::start(self.engine).await
    }
}

impl Engine {
    /// Applies `change` to the stored job under the row lock, stamps it
    /// updated, stores it and publishes it.
    async fn change_job(
        &self,
        id: &str,
        change: impl FnOnce(&mut CronJob, i64),
    ) -> Result<CronJob, EngineError> {
        let shared = &self.shared;
        let _rows = shared.cron.rows.lock().await;
        // The stored row, not the live view: `running` is never stored.
        let mut job = shared.store.job(id).await?.ok_or_else(|| not_found(id))?;
        let now = shared.clock.now_ms();
        change(&mut job, now);
        self.check_name_free(&job.name, Some(&job.id)).await?;
        job.updated_at = now;
        shared.store.put_job(&job).await?;
        let job = self.with_live_status(job);
        self.job_changed(CronEvent::Updated {
            job: Box::new(job.clone()),
        });
        Ok(job)
    }

    async fn check_name_free(&self, name: &str, own_id: Option<&str>) -> Result<(), EngineError> {
        match self.shared.store.job_by_name(name).await? {
            Some(other) if Some(other.id.as_str()) != own_id => Err(EngineError::InvalidInput(
                format!("a job named `{name}` already exists; choose another name"),
            )),
            _ => Ok(()),
        }
    }

    fn found(&self, job: Option<CronJob>, key: &str) -> Result<CronJob, EngineError> {
        job.map(|j| self.with_live_status(j))
            .ok_or_else(|| not_found(key))
    }

    /// The stored job with its status as of now: `running` while a run is
    /// in progress (the store only keeps active or paused).
    fn with_live_status(&self, mut job: CronJob) -> CronJob {
        if self.shared.cron.is_running(&job.id) {
            job.status = JobStatus::Running;
        } else if job.status == JobStatus::Running {
            job.status = JobStatus::Active;
        }
        job
    }

    /// Publishes a job change and wakes the scheduler to look again.
    fn job_changed(&self, event: CronEvent) {
        self.publish(None, EngineEventKind::Cron(event));
        self.shared.cron.wake.notify_one();
    }
}

fn not_found(key: &str) -> EngineError {
    EngineError::NotFound {
        what: "job",
        name: key.to_owned(),
    }
}

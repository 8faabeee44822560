//! The scheduler: one task that starts each active job when it is due and
//! sleeps until the next one is (or until jobs change). A job still running
//! when it comes due again skips that run; runs left unfinished by a
//! stopped server are closed as cancelled when a scheduler starts.

use std::time::Duration;

use gantry_types::cron::{CronEvent, ExecutionStatus, ExecutionTrigger, JobStatus};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::execute::execute;
use super::schedule::next_run_after;
use crate::engine_events::EngineEventKind;
use crate::{Engine, EngineError};

/// Longest sleep between looks at the jobs, so that a jump of the wall
/// clock (suspend, NTP) delays a run by at most this much.
const MAX_NAP: Duration = Duration::from_secs(30);

/// Wait before looking again after the store failed.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// A running scheduler (see [`Jobs::start_scheduler`](crate::Jobs::start_scheduler)). Dropping it stops
/// the scheduler and cancels the runs it started; [`SchedulerHandle::stop`]
/// also waits until they are recorded.
pub struct SchedulerHandle {
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl SchedulerHandle {
    /// Stops the scheduler: no new run starts, runs in progress are
    /// cancelled (their process groups killed) and recorded as cancelled.
    /// Returns once they are.
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for SchedulerHandle {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Closes runs a stopped server left unfinished, then starts the loop.
pub(super) async fn start(engine: &Engine) -> Result<SchedulerHandle, EngineError> {
    close_unfinished(engine).await?;
    let stop = CancellationToken::new();
    let task = tokio::spawn(run(engine.clone(), stop.clone()));
    Ok(SchedulerHandle {
        stop,
        task: Some(task),
    })
}

/// Marks runs stored as running, whose job is not running here, as
/// cancelled: the process that ran them is gone.
async fn close_unfinished(engine: &Engine) -> Result<(), EngineError> {
    let shared = &engine.shared;
    for mut execution in shared.store.unfinished_executions().await? {
        let _rows = shared.cron.rows.lock().await;
        if shared.cron.is_running(&execution.job_id) {
            continue;
        }
        execution.status = ExecutionStatus::Cancelled;
        execution.error = Some("the server stopped while this run was in progress".to_owned());
        if let Some(mut job) = shared.store.job(&execution.job_id).await? {
            job.fail_count += 1;
            shared.store.put_job(&job).await?;
        }
        shared.store.put_execution(&execution).await?;
        engine.publish(
            None,
            EngineEventKind::Cron(CronEvent::Finished {
                execution: Box::new(execution),
            }),
        );
    }
    Ok(())
}

/// The loop: start what is due, sleep until the next due time or a change.
async fn run(engine: Engine, stop: CancellationToken) {
    let mut runs = JoinSet::new();
    // Runs due before this moment came due while no scheduler ran.
    let started = engine.shared.clock.now_ms();
    loop {
        let nap = match start_due(&engine, &stop, &mut runs, started).await {
            Ok(next) => next.map_or(MAX_NAP, |at| {
                let ms = at.saturating_sub(engine.shared.clock.now_ms()).max(0);
                Duration::from_millis(u64::try_from(ms).unwrap_or(0)).min(MAX_NAP)
            }),
            Err(e) => {
                tracing::warn!(error = %e, "scheduler: cannot read the jobs; retrying");
                RETRY_AFTER
            }
        };
        tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            _ = engine.shared.cron.wake.notified() => {}
            Some(done) = runs.join_next(), if !runs.is_empty() => log_run(done),
            _ = tokio::time::sleep(nap) => {}
        }
    }
    // Each run's token is a child of `stop`: they are all being cancelled.
    while let Some(done) = runs.join_next().await {
        log_run(done);
    }
}

/// Starts every active job that is due; returns the earliest future due
/// time. A run due before `started` (the scheduler's start) was missed.
async fn start_due(
    engine: &Engine,
    stop: &CancellationToken,
    runs: &mut JoinSet<()>,
    started: i64,
) -> Result<Option<i64>, EngineError> {
    let shared = &engine.shared;
    let now = shared.clock.now_ms();
    let mut next: Option<i64> = None;
    for job in shared.store.jobs().await? {
        let Some(at) = job.next_run.filter(|_| job.status != JobStatus::Paused) else {
            continue;
        };
        if at > now {
            next = Some(next.map_or(at, |n| n.min(at)));
            continue;
        }
        let trigger = if at < started {
            ExecutionTrigger::Missed
        } else {
            ExecutionTrigger::Schedule
        };
        let cancel = stop.child_token();
        match shared.cron.claim(&job.id, cancel.clone(), Some(at)) {
            Some(claim) => {
                let engine = engine.clone();
                runs.spawn(async move {
                    let run = execute(engine, job.id.clone(), trigger, cancel, claim);
                    if let Err(e) = run.await {
                        tracing::warn!(job = %job.name, error = %e, "scheduled job run failed to record");
                    }
                });
            }
            // The run started for this very due time has not recorded
            // itself yet (a wake-up came first): it is not a late run.
            None if shared.cron.runs_for(&job.id, at) => {}
            None => skip_run(engine, &job.id, now).await?,
        }
    }
    Ok(next)
}

/// The job is still running from before: this run is skipped, the next
/// one counts from now.
async fn skip_run(engine: &Engine, job_id: &str, now: i64) -> Result<(), EngineError> {
    let shared = &engine.shared;
    let _rows = shared.cron.rows.lock().await;
    let Some(mut job) = shared.store.job(job_id).await? else {
        return Ok(());
    };
    if job.next_run.is_some_and(|at| at <= now) {
        job.next_run = next_run_after(&job.schedule, now);
        shared.store.put_job(&job).await?;
    }
    Ok(())
}

fn log_run(done: Result<(), tokio::task::JoinError>) {
    if let Err(e) = done {
        tracing::warn!(error = %e, "a scheduled job's task ended abnormally");
    }
}

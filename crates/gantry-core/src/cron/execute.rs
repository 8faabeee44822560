//! One run of a job with its bookkeeping: the execution is stored (running)
//! and the job's last/next run updated before the action starts; the result,
//! the job's counts and the events follow when it ends.

use std::time::{Duration, Instant};

use gantry_tools::Launch;
use gantry_types::cron::{
    CronEvent, CronExecution, ExecutionStatus, ExecutionTrigger, JobAction, JobStatus,
};
use gantry_types::new_id;
use tokio_util::sync::CancellationToken;

use super::command::run_command;
use super::outcome::Outcome;
use super::prompt::run_prompt;
use super::schedule::next_run_after;
use super::state::Claim;
use crate::engine_events::EngineEventKind;
use crate::{Engine, EngineError};

/// Runs job `job_id` once. `claim` (the job's slot in the running set) is
/// released just before the `finished` event, so whoever sees that event
/// can run the job again. A scheduled run of a job that is no longer due
/// (paused or rescheduled since the scheduler looked) does not start: `None`.
pub(super) async fn execute(
    engine: Engine,
    job_id: String,
    trigger: ExecutionTrigger,
    cancel: CancellationToken,
    claim: Claim,
) -> Result<Option<CronExecution>, EngineError> {
    let shared = &engine.shared;
    let started = Instant::now();
    let now = shared.clock.now_ms();
    let (job, thread, mut execution) = {
        let _rows = shared.cron.rows.lock().await;
        let mut job = shared
            .store
            .job(&job_id)
            .await?
            .ok_or_else(|| EngineError::NotFound {
                what: "job",
                name: job_id.clone(),
            })?;
        let due = job.status != JobStatus::Paused && job.next_run.is_some_and(|at| at <= now);
        if trigger != ExecutionTrigger::Manual && !due {
            return Ok(None);
        }
        job.last_run = Some(now);
        // The next run counts from now, not from the run that was due: a
        // server that was down runs a missed job once, not once per tick.
        if trigger != ExecutionTrigger::Manual {
            job.next_run = next_run_after(&job.schedule, now);
        }
        let execution = CronExecution {
            id: new_id(),
            job_id: job.id.clone(),
            status: ExecutionStatus::Running,
            trigger,
            started_at: now,
            ended_at: None,
            duration_ms: None,
            exit_code: None,
            stdout: String::new(),
            stderr: String::new(),
            error: None,
            turn_id: None,
        };
        shared.store.put_job(&job).await?;
        shared.store.put_execution(&execution).await?;
        let thread = match &job.action {
            JobAction::Prompt { thread_id, .. } => Some(thread_id.clone()),
            JobAction::Command { .. } => None,
        };
        // Published under the row lock, so a pause or delete is never
        // announced before a run that started ahead of it.
        engine.publish(
            thread.clone(),
            EngineEventKind::Cron(CronEvent::Started {
                execution: Box::new(execution.clone()),
            }),
        );
        (job, thread, execution)
    };

    let timeout = Duration::from_millis(job.timeout_ms);
    let outcome = match &job.action {
        JobAction::Command { command, cwd } => {
            run_command_job(&engine, command, cwd.as_deref(), timeout, &cancel).await
        }
        JobAction::Prompt { thread_id, prompt } => {
            run_prompt(&engine, thread_id, prompt, timeout, &cancel).await
        }
    };
    execution.status = match outcome.status {
        // The turn could not be stopped; the run is over all the same.
        ExecutionStatus::Running => ExecutionStatus::Failed,
        status => status,
    };
    execution.ended_at = Some(shared.clock.now_ms());
    execution.duration_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
    execution.exit_code = outcome.exit_code;
    execution.stdout = outcome.stdout;
    execution.stderr = outcome.stderr;
    execution.error = outcome.error.filter(|e| !e.is_empty());
    execution.turn_id = outcome.turn_id;

    let recorded = record_end(&engine, &execution).await;
    drop(claim);
    engine.publish(
        thread,
        EngineEventKind::Cron(CronEvent::Finished {
            execution: Box::new(execution.clone()),
        }),
    );
    shared.cron.wake.notify_one();
    recorded.map(|()| Some(execution))
}

/// One run of a command job: its command, and its login profile, run
/// unsandboxed. Refused where the server lets no client run commands
/// outside the sandbox (a job stored before the ceiling was lowered).
async fn run_command_job(
    engine: &Engine,
    command: &str,
    cwd: Option<&str>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Outcome {
    let allowed = engine
        .shared
        .config
        .check_client_command("a scheduled command job");
    if let Err(refused) = allowed {
        return Outcome::failed(refused.to_string());
    }
    let env = engine.shared.command_env();
    let launch = match &engine.shared.shell_snapshots {
        Some(snapshots) => Some(
            snapshots
                .launch(&env, &gantry_tools::SandboxPolicy::danger_full_access())
                .await,
        ),
        None => None,
    };
    let snapshot = launch.as_ref().and_then(Launch::file);
    run_command(command, cwd, &env, snapshot, timeout, cancel).await
}

/// Stores the finished run and counts it on its job, unless the job was
/// deleted meanwhile (its history went with it).
async fn record_end(engine: &Engine, execution: &CronExecution) -> Result<(), EngineError> {
    let shared = &engine.shared;
    let _rows = shared.cron.rows.lock().await;
    let Some(mut job) = shared.store.job(&execution.job_id).await? else {
        return Ok(());
    };
    if execution.status == ExecutionStatus::Success {
        job.run_count += 1;
    } else {
        job.fail_count += 1;
    }
    shared.store.put_job(&job).await?;
    shared.store.put_execution(execution).await?;
    Ok(())
}

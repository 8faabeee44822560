//! Scheduled jobs, over the engine's cron API. The seed's jobs run shell
//! commands; a job created here runs in the server's workspace (the
//! request names no directory), shown as the job's `working_dir`. Jobs
//! other protocols made that send a prompt to a thread show the prompt as
//! their `command`.
//!
//! An agent job (`CRON_JOB_TYPE_AGENT`) gets a session of its own, made
//! from its `CronAgentConfig` as `CreateSession` makes one (its key sealed
//! beside the thread, never shown again), and sends its `command` to that
//! session as a prompt on each run: its runs are that thread's turns,
//! unattended (what would ask for approval is refused), restart-safe as
//! every job is.

use gantry_core::{EngineError, JobUpdate, NewJob, ParsedSchedule};
use gantry_grpc::clip;
use gantry_types::cron::{CronExecution, CronJob, ExecutionStatus, JobAction, JobStatus};
use tonic::Status;

use super::Ctx;
use crate::pb;
use crate::status::{required, status};

/// `ListCronJobs`: every job, by name, with its live status.
pub(crate) async fn list_cron_jobs(
    ctx: &Ctx,
    _req: pb::ListCronJobsRequest,
) -> Result<pb::ListCronJobsResponse, Status> {
    let jobs = ctx.engine.jobs().list().await.map_err(status)?;
    let mut described = Vec::with_capacity(jobs.len());
    for j in &jobs {
        described.push(describe(ctx, j).await);
    }
    Ok(pb::ListCronJobsResponse { jobs: described })
}

/// `CreateCronJob`: a command job in the server's workspace, active from
/// now (its first run is the schedule's next time). The schedule is cron
/// (5 fields, or 6 with seconds first) or English ("every day at 9am");
/// the timeout defaults to 60 s. `ALREADY_EXISTS` if the name is taken.
pub(crate) async fn create_cron_job(
    ctx: &Ctx,
    req: pb::CreateCronJobRequest,
) -> Result<pb::CreateCronJobResponse, Status> {
    let name = required("name", &req.name)?;
    let schedule = schedule(ctx, "schedule", &req.schedule)?;
    let command = required("command", &req.command)?;
    let timeout_ms = req.timeout_ms.map(timeout_ms).transpose()?;
    let agent = req.job_type == pb::CronJobType::Agent as i32;
    if agent
        && req
            .agent_config
            .as_ref()
            .is_none_or(|c| c.model.trim().is_empty())
    {
        return Err(Status::invalid_argument(
            "agent_config.model: required for an agent job",
        ));
    }
    match ctx.engine.jobs().by_name(name).await {
        Ok(_) => {
            return Err(Status::already_exists(format!(
                "a job named `{name}` already exists; choose another name",
                name = clip(name)
            )));
        }
        Err(EngineError::NotFound { .. }) => {}
        Err(e) => return Err(status(e)),
    }
    let created = ctx
        .engine
        .jobs()
        .create(NewJob {
            name: name.to_owned(),
            schedule: schedule.expression,
            action: match req.agent_config.filter(|_| agent) {
                Some(config) => JobAction::Prompt {
                    thread_id: agent_session(ctx, name, config).await?,
                    prompt: command.to_owned(),
                },
                None => JobAction::Command {
                    command: command.to_owned(),
                    cwd: Some(ctx.workspace().to_string_lossy().into_owned()),
                },
            },
            timeout_ms,
        })
        .await
        .map_err(status)?;
    Ok(pb::CreateCronJobResponse {
        success: true,
        job: Some(describe(ctx, &created).await),
        error: String::new(),
    })
}

/// `GetCronJob`: a job by id, or by name when no id is given.
pub(crate) async fn get_cron_job(
    ctx: &Ctx,
    req: pb::GetCronJobRequest,
) -> Result<pb::GetCronJobResponse, Status> {
    let given = |field: &Option<String>| {
        field
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let found = match (given(&req.id), given(&req.name)) {
        (Some(id), _) => ctx.engine.jobs().get(&id).await,
        (None, Some(name)) => ctx.engine.jobs().by_name(&name).await,
        (None, None) => return Err(Status::invalid_argument("id or name: required")),
    };
    let found = found.map_err(status)?;
    Ok(pb::GetCronJobResponse {
        job: Some(describe(ctx, &found).await),
    })
}

/// `UpdateCronJob`: changes the schedule, command and/or timeout given;
/// the job keeps its directory. A new schedule of an active job moves its
/// next run to the new schedule's next time.
pub(crate) async fn update_cron_job(
    ctx: &Ctx,
    req: pb::UpdateCronJobRequest,
) -> Result<pb::UpdateCronJobResponse, Status> {
    let id = required("id", &req.id)?;
    if req.schedule.is_none() && req.command.is_none() && req.timeout_ms.is_none() {
        return Err(Status::invalid_argument(
            "schedule, command or timeout_ms: give at least one to change",
        ));
    }
    let schedule = match req.schedule.as_deref() {
        Some(input) => Some(schedule(ctx, "schedule", input)?.expression),
        None => None,
    };
    let timeout_ms = req.timeout_ms.map(timeout_ms).transpose()?;
    let action = match req.command.as_deref() {
        Some(command) => {
            let command = required("command", command)?;
            let current = ctx.engine.jobs().get(id).await.map_err(status)?;
            Some(with_command(current.action, command))
        }
        None => None,
    };
    let updated = ctx
        .engine
        .jobs()
        .update(
            id,
            JobUpdate {
                name: None,
                schedule,
                action,
                timeout_ms,
            },
        )
        .await
        .map_err(status)?;
    Ok(pb::UpdateCronJobResponse {
        success: true,
        job: Some(describe(ctx, &updated).await),
        error: String::new(),
    })
}

/// `PauseCronJob`: the scheduler leaves the job alone (a run in progress
/// goes on; `RunCronJob` still works).
pub(crate) async fn pause_cron_job(
    ctx: &Ctx,
    req: pb::PauseCronJobRequest,
) -> Result<pb::PauseCronJobResponse, Status> {
    let id = required("id", &req.id)?;
    let paused = ctx.engine.jobs().pause(id).await.map_err(status)?;
    Ok(pb::PauseCronJobResponse {
        success: true,
        job: Some(describe(ctx, &paused).await),
        error: String::new(),
    })
}

/// `ResumeCronJob`: a paused job runs on its schedule again, from the
/// schedule's next time (runs missed while paused are not made up).
pub(crate) async fn resume_cron_job(
    ctx: &Ctx,
    req: pb::ResumeCronJobRequest,
) -> Result<pb::ResumeCronJobResponse, Status> {
    let id = required("id", &req.id)?;
    let resumed = ctx.engine.jobs().resume(id).await.map_err(status)?;
    Ok(pb::ResumeCronJobResponse {
        success: true,
        job: Some(describe(ctx, &resumed).await),
        error: String::new(),
    })
}

/// `DeleteCronJob`: deletes the job and its history; a run in progress is
/// cancelled.
pub(crate) async fn delete_cron_job(
    ctx: &Ctx,
    req: pb::DeleteCronJobRequest,
) -> Result<pb::DeleteCronJobResponse, Status> {
    let id = required("id", &req.id)?;
    ctx.engine.jobs().delete(id).await.map_err(status)?;
    Ok(pb::DeleteCronJobResponse {
        success: true,
        error: String::new(),
    })
}

/// `GetCronHistory`: the job's runs, newest first, at most `limit`
/// (default 10, at most 1000).
pub(crate) async fn get_cron_history(
    ctx: &Ctx,
    req: pb::GetCronHistoryRequest,
) -> Result<pb::GetCronHistoryResponse, Status> {
    let id = required("id", &req.id)?;
    let runs = ctx
        .engine
        .jobs()
        .history(id, req.limit)
        .await
        .map_err(status)?;
    Ok(pb::GetCronHistoryResponse {
        executions: runs.iter().map(execution).collect(),
    })
}

/// `RunCronJob`: runs the job now, whatever its status and schedule, and
/// answers with the finished run (`success` says the job ran; the run's
/// own status says how it went). `FAILED_PRECONDITION` while the job is
/// already running.
pub(crate) async fn run_cron_job(
    ctx: &Ctx,
    req: pb::RunCronJobRequest,
) -> Result<pb::RunCronJobResponse, Status> {
    let id = required("id", &req.id)?;
    let run = ctx.engine.jobs().run_now(id).await.map_err(|e| match e {
        // The engine's only refusal of a known job: it is running.
        EngineError::InvalidInput(message) => Status::failed_precondition(message),
        other => status(other),
    })?;
    Ok(pb::RunCronJobResponse {
        success: true,
        execution: Some(execution(&run)),
        error: String::new(),
    })
}

/// `ParseCronSchedule`: a schedule (cron or English) as the cron
/// expression a job would store and its meaning in words.
pub(crate) async fn parse_cron_schedule(
    ctx: &Ctx,
    req: pb::ParseCronScheduleRequest,
) -> Result<pb::ParseCronScheduleResponse, Status> {
    let parsed = schedule(ctx, "input", &req.input)?;
    Ok(pb::ParseCronScheduleResponse {
        success: true,
        cron_expression: parsed.expression,
        description: parsed.description,
        error: String::new(),
    })
}

/// A required schedule in `field`, read as a job would read it; the error
/// names the field and says what is accepted.
fn schedule(ctx: &Ctx, field: &str, input: &str) -> Result<ParsedSchedule, Status> {
    let input = required(field, input)?;
    ctx.engine
        .jobs()
        .parse_schedule(input)
        .map_err(|e| Status::invalid_argument(format!("{field}: {e}")))
}

/// A time limit: at least 1 ms.
fn timeout_ms(timeout_ms: u64) -> Result<u64, Status> {
    if timeout_ms == 0 {
        return Err(Status::invalid_argument(
            "timeout_ms: must be at least 1 (default: 60000)",
        ));
    }
    Ok(timeout_ms)
}

/// `action` running `command` instead: a command job keeps its directory,
/// a prompt job its thread (its prompt is its seed `command`).
fn with_command(action: JobAction, command: &str) -> JobAction {
    match action {
        JobAction::Command { cwd, .. } => JobAction::Command {
            command: command.to_owned(),
            cwd,
        },
        JobAction::Prompt { thread_id, .. } => JobAction::Prompt {
            thread_id,
            prompt: command.to_owned(),
        },
    }
}

/// The session an agent job runs in, made from its config as
/// `CreateSession` makes one.
async fn agent_session(
    ctx: &Ctx,
    name: &str,
    config: pb::CronAgentConfig,
) -> Result<gantry_types::ThreadId, Status> {
    let session = pb::SessionConfig {
        name: format!("job {name}"),
        workspace: config.workspace.unwrap_or_default(),
        llm: Some(pb::LlmConfig {
            model: config.model,
            api_key: config.api_key,
            base_url: config.base_url.unwrap_or_default(),
            ..pb::LlmConfig::default()
        }),
        system_prompt: config.system_prompt.unwrap_or_default(),
        ..pb::SessionConfig::default()
    };
    let created = super::sessions::create_session(
        ctx,
        pb::CreateSessionRequest {
            config: Some(session),
            ..pb::CreateSessionRequest::default()
        },
    )
    .await?;
    Ok(gantry_types::ThreadId::from(created.session_id.as_str()))
}

/// A job as the newer proto shows it: a prompt job is an agent job, its
/// config read from its session (the key never: it stays sealed).
async fn describe(ctx: &Ctx, j: &CronJob) -> pb::CronJob {
    let mut shown = job(j);
    if let JobAction::Prompt { thread_id, .. } = &j.action {
        shown.job_type = pb::CronJobType::Agent.into();
        if let Ok(view) = ctx.engine.threads().read(thread_id).await {
            let thread = &view.thread;
            shown.working_dir = Some(thread.cwd.clone());
            shown.agent_config = Some(pb::CronAgentConfig {
                model: thread.model.clone(),
                api_key: String::new(),
                workspace: Some(thread.cwd.clone()),
                system_prompt: thread.instructions.clone(),
                base_url: thread.endpoint.as_ref().and_then(|e| e.base_url.clone()),
            });
        }
    }
    shown
}

/// A job as the seed shows it.
fn job(j: &CronJob) -> pb::CronJob {
    let status = match j.status {
        JobStatus::Active => pb::CronJobStatus::Active,
        JobStatus::Paused => pb::CronJobStatus::Paused,
        JobStatus::Running => pb::CronJobStatus::Running,
    };
    pb::CronJob {
        id: j.id.clone(),
        name: j.name.clone(),
        schedule: j.schedule.clone(),
        command: j.command_text().to_owned(),
        status: status.into(),
        timeout_ms: j.timeout_ms,
        created_at: j.created_at,
        updated_at: j.updated_at,
        last_run: j.last_run,
        next_run: j.next_run,
        run_count: j.run_count,
        fail_count: j.fail_count,
        working_dir: j.working_dir().map(str::to_owned),
        job_type: pb::CronJobType::Shell.into(),
        agent_config: None,
    }
}

/// A run as the seed shows it. The seed has no status for a run still in
/// progress: it is `UNKNOWN`, with no `ended_at`.
fn execution(e: &CronExecution) -> pb::CronExecution {
    let status = match e.status {
        ExecutionStatus::Running => pb::CronExecutionStatus::Unknown,
        ExecutionStatus::Success => pb::CronExecutionStatus::Success,
        ExecutionStatus::Failed => pb::CronExecutionStatus::Failed,
        ExecutionStatus::Timeout => pb::CronExecutionStatus::Timeout,
        ExecutionStatus::Cancelled => pb::CronExecutionStatus::Cancelled,
    };
    pb::CronExecution {
        id: e.id.clone(),
        job_id: e.job_id.clone(),
        status: status.into(),
        started_at: e.started_at,
        ended_at: e.ended_at,
        duration_ms: e.duration_ms,
        exit_code: e.exit_code,
        stdout: e.stdout.clone(),
        stderr: e.stderr.clone(),
        error: e.error.clone(),
    }
}

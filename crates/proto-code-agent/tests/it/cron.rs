//! Scheduled jobs over the wire: create, run now, history, list, get,
//! update, pause, resume, delete, the scheduler, schedules in English, and
//! the errors.

use crate::common;

use common::{Server, guard};
use gantry_core::{EngineEventKind, EngineEventNotice, EngineEvents};
use gantry_types::cron::{CronEvent, CronExecution, ExecutionTrigger};
use proto_code_agent::pb;
use tonic::Code;

/// A job that would not run on its own during a test (1 January, 00:00).
const RARELY: &str = "0 0 1 1 *";

fn new_job(name: &str, schedule: &str, command: &str) -> pb::CreateCronJobRequest {
    pb::CreateCronJobRequest {
        name: name.into(),
        schedule: schedule.into(),
        command: command.into(),
        timeout_ms: None,
        ..pb::CreateCronJobRequest::default()
    }
}

async fn create(s: &mut Server, request: pb::CreateCronJobRequest) -> pb::CronJob {
    let created = s
        .client
        .create_cron_job(request)
        .await
        .unwrap()
        .into_inner();
    assert!(created.success && created.error.is_empty());
    created.job.unwrap()
}

async fn get(s: &mut Server, id: &str) -> pb::CronJob {
    s.client
        .get_cron_job(pb::GetCronJobRequest {
            id: Some(id.into()),
            name: None,
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap()
}

/// The next cron event of `job` matching `pick`.
async fn next_run<T>(
    events: &mut EngineEvents,
    job: &str,
    pick: impl Fn(&CronEvent) -> Option<T>,
) -> T {
    guard("a cron event", async {
        loop {
            match events.recv().await.expect("the engine is gone") {
                EngineEventNotice::Event(e) => {
                    if let EngineEventKind::Cron(event) = &e.kind
                        && let Some(found) = pick(event)
                    {
                        return found;
                    }
                }
                EngineEventNotice::Lagged { resume_from } => {
                    panic!("fell behind at {resume_from}, events of job {job}")
                }
            }
        }
    })
    .await
}

fn finished_of(job: &str) -> impl Fn(&CronEvent) -> Option<CronExecution> + '_ {
    move |event| match event {
        CronEvent::Finished { execution } if execution.job_id == job => Some((**execution).clone()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_now_in_the_workspace_and_its_runs_are_recorded() {
    let mut s = Server::start(vec![]).await;
    let job = create(
        &mut s,
        new_job(
            "greet",
            RARELY,
            "echo hello > greeting.txt && echo done && echo oops >&2",
        ),
    )
    .await;
    assert_eq!(job.status(), pb::CronJobStatus::Active);
    assert_eq!(job.schedule, RARELY);
    assert_eq!(job.timeout_ms, 60_000, "the default timeout");
    assert_eq!(
        job.working_dir.as_deref(),
        Some(&*s.workspace().to_string_lossy())
    );
    assert!(job.next_run.is_some() && job.last_run.is_none());

    let ran = s
        .client
        .run_cron_job(pb::RunCronJobRequest { id: job.id.clone() })
        .await
        .unwrap()
        .into_inner();
    assert!(ran.success);
    let run = ran.execution.unwrap();
    assert_eq!(run.status(), pb::CronExecutionStatus::Success);
    assert_eq!(
        (run.job_id.as_str(), run.exit_code),
        (job.id.as_str(), Some(0))
    );
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str()),
        ("done\n", "oops\n")
    );
    assert!(run.ended_at.is_some() && run.duration_ms.is_some() && run.error.is_none());
    let written = std::fs::read_to_string(s.workspace().join("greeting.txt")).unwrap();
    assert_eq!(written, "hello\n");

    // A failing command: the run says how it failed, the job counts it.
    let updated = s
        .client
        .update_cron_job(pb::UpdateCronJobRequest {
            id: job.id.clone(),
            command: Some("echo broken >&2; exit 3".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(updated.working_dir, job.working_dir, "the directory stays");
    let failed = s
        .client
        .run_cron_job(pb::RunCronJobRequest { id: job.id.clone() })
        .await
        .unwrap()
        .into_inner()
        .execution
        .unwrap();
    assert_eq!(failed.status(), pb::CronExecutionStatus::Failed);
    assert_eq!(
        (failed.exit_code, failed.stderr.as_str()),
        (Some(3), "broken\n")
    );

    let by_name = s
        .client
        .get_cron_job(pb::GetCronJobRequest {
            id: None,
            name: Some("greet".into()),
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!((by_name.run_count, by_name.fail_count), (1, 1));
    assert_eq!(by_name.last_run, Some(failed.started_at));
    assert_eq!(by_name.command, "echo broken >&2; exit 3");

    let history = s
        .client
        .get_cron_history(pb::GetCronHistoryRequest {
            id: job.id.clone(),
            limit: None,
        })
        .await
        .unwrap()
        .into_inner()
        .executions;
    let ids: Vec<&str> = history.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, [failed.id.as_str(), run.id.as_str()], "newest first");
    let newest = s
        .client
        .get_cron_history(pb::GetCronHistoryRequest {
            id: job.id.clone(),
            limit: Some(1),
        })
        .await
        .unwrap()
        .into_inner()
        .executions;
    assert_eq!(newest, [failed]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_are_listed_updated_paused_resumed_and_deleted() {
    let mut s = Server::start(vec![]).await;
    let nightly = create(&mut s, new_job("nightly", "every day at 3am", "true")).await;
    assert_eq!(nightly.schedule, "0 3 * * *", "English becomes cron");
    let hourly = create(
        &mut s,
        pb::CreateCronJobRequest {
            timeout_ms: Some(5_000),
            ..new_job("hourly", "0 * * * *", "true")
        },
    )
    .await;
    assert_eq!(hourly.timeout_ms, 5_000);
    let listed: Vec<String> = s
        .client
        .list_cron_jobs(pb::ListCronJobsRequest {})
        .await
        .unwrap()
        .into_inner()
        .jobs
        .into_iter()
        .map(|j| j.name)
        .collect();
    assert_eq!(listed, ["hourly", "nightly"]);

    let updated = s
        .client
        .update_cron_job(pb::UpdateCronJobRequest {
            id: nightly.id.clone(),
            schedule: Some("every 5 minutes".into()),
            timeout_ms: Some(1_000),
            command: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(updated.success);
    let updated = updated.job.unwrap();
    assert_eq!(
        (updated.schedule.as_str(), updated.timeout_ms),
        ("*/5 * * * *", 1_000)
    );
    assert_eq!(updated.command, "true");
    assert!(updated.updated_at >= nightly.updated_at);

    let paused = s
        .client
        .pause_cron_job(pb::PauseCronJobRequest {
            id: nightly.id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(paused.success);
    let paused = paused.job.unwrap();
    assert_eq!(paused.status(), pb::CronJobStatus::Paused);
    assert_eq!(paused.next_run, None, "a paused job is not scheduled");
    // A paused job still runs on demand.
    let ran = s
        .client
        .run_cron_job(pb::RunCronJobRequest {
            id: nightly.id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .execution
        .unwrap();
    assert_eq!(ran.status(), pb::CronExecutionStatus::Success);
    assert_eq!(
        get(&mut s, &nightly.id).await.status(),
        pb::CronJobStatus::Paused
    );

    let resumed = s
        .client
        .resume_cron_job(pb::ResumeCronJobRequest {
            id: nightly.id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(resumed.success);
    let resumed = resumed.job.unwrap();
    assert_eq!(resumed.status(), pb::CronJobStatus::Active);
    assert!(resumed.next_run.is_some());

    let deleted = s
        .client
        .delete_cron_job(pb::DeleteCronJobRequest {
            id: nightly.id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(deleted.success && deleted.error.is_empty());
    let gone = s
        .client
        .get_cron_job(pb::GetCronJobRequest {
            id: Some(nightly.id.clone()),
            name: None,
        })
        .await
        .unwrap_err();
    assert_eq!(gone.code(), Code::NotFound, "{gone:?}");
    let history = s
        .client
        .get_cron_history(pb::GetCronHistoryRequest {
            id: nightly.id.clone(),
            limit: None,
        })
        .await
        .unwrap_err();
    assert_eq!(history.code(), Code::NotFound, "the history went with it");
    let left = s
        .client
        .list_cron_jobs(pb::ListCronJobsRequest {})
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert_eq!(left, [hourly]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheduler_runs_an_active_job_on_its_schedule() {
    let mut s = Server::start(vec![]).await;
    let mut events = s.engine.feeds().engine_events();
    let _scheduler = s.engine.jobs().start_scheduler().await.unwrap();
    let job = create(&mut s, new_job("tick", "* * * * * *", "echo tick")).await;
    let run = next_run(&mut events, &job.id, finished_of(&job.id)).await;
    assert_eq!(run.trigger, ExecutionTrigger::Schedule);
    // Stop it before reading: no run changes the job under the asserts.
    s.client
        .pause_cron_job(pb::PauseCronJobRequest { id: job.id.clone() })
        .await
        .unwrap();
    let history = s
        .client
        .get_cron_history(pb::GetCronHistoryRequest {
            id: job.id.clone(),
            limit: Some(1000),
        })
        .await
        .unwrap()
        .into_inner()
        .executions;
    let scheduled = history
        .iter()
        .find(|e| e.id == run.id)
        .expect("the scheduled run is in the history");
    assert_eq!(scheduled.status(), pb::CronExecutionStatus::Success);
    assert_eq!(scheduled.stdout, "tick\n");
    let job = get(&mut s, &job.id).await;
    assert!(job.run_count >= 1 && job.last_run.is_some(), "{job:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_shows_running_and_is_not_run_twice() {
    let mut s = Server::start(vec![]).await;
    let mut events = s.engine.feeds().engine_events();
    let release = s.workspace().join("release");
    let job = create(
        &mut s,
        new_job(
            "slow",
            RARELY,
            "while [ ! -f release ]; do sleep 0.02; done; echo released",
        ),
    )
    .await;
    let mut client = s.client.clone();
    let id = job.id.clone();
    let first =
        tokio::spawn(async move { client.run_cron_job(pb::RunCronJobRequest { id }).await });
    next_run(&mut events, &job.id, |event| match event {
        CronEvent::Started { execution } if execution.job_id == job.id => Some(()),
        _ => None,
    })
    .await;

    assert_eq!(
        get(&mut s, &job.id).await.status(),
        pb::CronJobStatus::Running
    );
    let history = s
        .client
        .get_cron_history(pb::GetCronHistoryRequest {
            id: job.id.clone(),
            limit: None,
        })
        .await
        .unwrap()
        .into_inner()
        .executions;
    assert_eq!(history.len(), 1);
    assert_eq!(
        history[0].status(),
        pb::CronExecutionStatus::Unknown,
        "still running"
    );
    assert_eq!(history[0].ended_at, None);
    let twice = s
        .client
        .run_cron_job(pb::RunCronJobRequest { id: job.id.clone() })
        .await
        .unwrap_err();
    assert_eq!(twice.code(), Code::FailedPrecondition, "{twice:?}");

    std::fs::write(&release, "").unwrap();
    let run = guard("the first run", first)
        .await
        .unwrap()
        .unwrap()
        .into_inner()
        .execution
        .unwrap();
    assert_eq!(run.status(), pb::CronExecutionStatus::Success);
    assert_eq!(run.stdout, "released\n");
    assert_eq!(
        get(&mut s, &job.id).await.status(),
        pb::CronJobStatus::Active
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_timeout_is_stopped() {
    let mut s = Server::start(vec![]).await;
    let job = create(
        &mut s,
        pb::CreateCronJobRequest {
            timeout_ms: Some(200),
            ..new_job("stuck", RARELY, "sleep 30")
        },
    )
    .await;
    let run = guard(
        "the timed out run",
        s.client
            .run_cron_job(pb::RunCronJobRequest { id: job.id.clone() }),
    )
    .await
    .unwrap()
    .into_inner()
    .execution
    .unwrap();
    assert_eq!(run.status(), pb::CronExecutionStatus::Timeout);
    assert!(run.error.is_some());
    assert_eq!(get(&mut s, &job.id).await.fail_count, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_parse_from_cron_and_english() {
    let mut s = Server::start(vec![]).await;
    for (input, expected) in [
        ("every day at 9am", "0 9 * * *"),
        ("*/15 * * * *", "*/15 * * * *"),
        ("every 5 minutes", "*/5 * * * *"),
    ] {
        let parsed = s
            .client
            .parse_cron_schedule(pb::ParseCronScheduleRequest {
                input: input.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(parsed.success && parsed.error.is_empty(), "{input}");
        assert_eq!(parsed.cron_expression, expected, "{input}");
        assert!(!parsed.description.is_empty(), "{input}");
    }
    for bad in ["", "whenever you like", "99 * * * *"] {
        let e = s
            .client
            .parse_cron_schedule(pb::ParseCronScheduleRequest { input: bad.into() })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{bad}: {e:?}");
        assert!(e.message().starts_with("input:"), "{bad}: {e:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_unknown_jobs_are_rejected() {
    let mut s = Server::start(vec![]).await;
    let job = create(&mut s, new_job("taken", RARELY, "true")).await;
    let c = &mut s.client;

    for (request, field) in [
        (new_job("", RARELY, "true"), "name"),
        (new_job("x", "", "true"), "schedule"),
        (new_job("x", "not a schedule", "true"), "schedule"),
        (new_job("x", RARELY, "  "), "command"),
        (
            pb::CreateCronJobRequest {
                timeout_ms: Some(0),
                ..new_job("x", RARELY, "true")
            },
            "timeout_ms",
        ),
    ] {
        let e = c.create_cron_job(request).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{field}: {e:?}");
        assert!(e.message().starts_with(field), "{field}: {e:?}");
    }
    let e = c
        .create_cron_job(new_job("taken", RARELY, "true"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::AlreadyExists, "{e:?}");

    let e = c
        .get_cron_job(pb::GetCronJobRequest::default())
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (Code::InvalidArgument, "id or name: required")
    );
    let e = c
        .get_cron_job(pb::GetCronJobRequest {
            id: None,
            name: Some("nope".into()),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");

    let update = |id: &str| pb::UpdateCronJobRequest {
        id: id.into(),
        ..Default::default()
    };
    let e = c.update_cron_job(update(&job.id)).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "nothing to change: {e:?}");
    for (request, field) in [
        (
            pb::UpdateCronJobRequest {
                schedule: Some("sometime".into()),
                ..update(&job.id)
            },
            "schedule",
        ),
        (
            pb::UpdateCronJobRequest {
                command: Some(String::new()),
                ..update(&job.id)
            },
            "command",
        ),
        (
            pb::UpdateCronJobRequest {
                timeout_ms: Some(0),
                ..update(&job.id)
            },
            "timeout_ms",
        ),
        (
            pb::UpdateCronJobRequest {
                timeout_ms: Some(1),
                ..update("")
            },
            "id",
        ),
    ] {
        let e = c.update_cron_job(request).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{field}: {e:?}");
        assert!(e.message().starts_with(field), "{field}: {e:?}");
    }
    let e = c
        .update_cron_job(pb::UpdateCronJobRequest {
            timeout_ms: Some(1),
            ..update("nope")
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");

    let id = || "nope".to_owned();
    let codes = [
        c.pause_cron_job(pb::PauseCronJobRequest { id: id() })
            .await
            .unwrap_err()
            .code(),
        c.resume_cron_job(pb::ResumeCronJobRequest { id: id() })
            .await
            .unwrap_err()
            .code(),
        c.delete_cron_job(pb::DeleteCronJobRequest { id: id() })
            .await
            .unwrap_err()
            .code(),
        c.run_cron_job(pb::RunCronJobRequest { id: id() })
            .await
            .unwrap_err()
            .code(),
        c.get_cron_history(pb::GetCronHistoryRequest {
            id: id(),
            limit: None,
        })
        .await
        .unwrap_err()
        .code(),
    ];
    assert_eq!(codes, [Code::NotFound; 5]);
    let e = c
        .run_cron_job(pb::RunCronJobRequest { id: String::new() })
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (Code::InvalidArgument, "id: required")
    );

    // Nothing above changed the job.
    let unchanged = get(&mut s, &job.id).await;
    assert_eq!(unchanged, job);
}

//! Scheduled jobs through the engine: a real SQLite file, real `sh`
//! processes, the scheduler on the real clock (jobs every second), and the
//! mock LLM over HTTP for prompt jobs. Waits are on engine events, with a
//! generous overall limit only as a hang guard.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gantry_core::{
    Clock, CreateThread, Engine, EngineBuilder, EngineConfig, EngineError, EngineEventKind,
    EngineEventNotice, EngineEvents, JobUpdate, NewJob, SingleModel, SystemClock,
};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_store::{JobStorage, SqliteStore};
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::cron::{
    CronEvent, CronExecution, ExecutionStatus, ExecutionTrigger, JobAction, JobStatus,
};

/// Hang guard for every wait below; never reached when things work.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// The system clock moved by a fixed offset: a server started later.
struct Shifted(i64);

impl Clock for Shifted {
    fn now_ms(&self) -> i64 {
        SystemClock.now_ms() + self.0
    }
}

async fn engine(dir: &Path, llm: &MockLlm, clock: Arc<dyn Clock>) -> Engine {
    let mut config = ClientConfig::new(llm.base_url());
    config.retry = fast_retries();
    let client = OpenAiChatClient::new(config).expect("client");
    let store = SqliteStore::open(&dir.join("gantry.db"))
        .await
        .expect("store");
    EngineBuilder::new(Arc::new(store), Arc::new(SingleModel(Arc::new(client))))
        .config(EngineConfig::default())
        .clock(clock)
        .start()
        .await
        .expect("engine")
}

struct Setup {
    engine: Engine,
    _llm: MockLlm,
    dir: tempfile::TempDir,
}

async fn setup(steps: Vec<Step>) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let llm = MockLlm::start(Script::new(steps)).expect("mock llm");
    let engine = engine(dir.path(), &llm, Arc::new(SystemClock)).await;
    // A bare home: jobs' commands do not wait on this machine's login profile.
    let home = dir.path().join("bare-home");
    std::fs::create_dir_all(&home).expect("home");
    engine
        .set_command_env(BTreeMap::from([(
            "HOME".to_owned(),
            home.display().to_string(),
        )]))
        .expect("command env");
    Setup {
        engine,
        _llm: llm,
        dir,
    }
}

fn command_job(name: &str, schedule: &str, command: &str, cwd: &Path) -> NewJob {
    NewJob {
        name: name.into(),
        schedule: schedule.into(),
        action: JobAction::Command {
            command: command.into(),
            cwd: Some(cwd.display().to_string()),
        },
        timeout_ms: None,
    }
}

/// The next cron event, skipping other engine events.
async fn next_cron(events: &mut EngineEvents) -> CronEvent {
    let wait = async {
        loop {
            match events.recv().await {
                Some(EngineEventNotice::Event(e)) => {
                    if let EngineEventKind::Cron(event) = e.kind {
                        return event;
                    }
                }
                Some(EngineEventNotice::Lagged { resume_from }) => {
                    panic!("fell behind at engine event {resume_from}")
                }
                None => panic!("the engine's event stream ended"),
            }
        }
    };
    tokio::time::timeout(HANG_GUARD, wait)
        .await
        .expect("a cron event in time")
}

/// Waits for `n` finished runs of `job_id`; returns them in order.
async fn finished_runs(events: &mut EngineEvents, job_id: &str, n: usize) -> Vec<CronExecution> {
    let mut runs = Vec::new();
    while runs.len() < n {
        if let CronEvent::Finished { execution } = next_cron(events).await
            && execution.job_id == job_id
        {
            runs.push(*execution);
        }
    }
    runs
}

#[tokio::test]
async fn a_job_every_second_runs_on_schedule_and_keeps_its_history() {
    let s = setup(vec![]).await;
    let mut events = s.engine.feeds().engine_events();
    let scheduler = s.engine.jobs().start_scheduler().await.unwrap();
    let job = s
        .engine
        .jobs()
        .create(command_job(
            "tick",
            "* * * * * *",
            "echo tick; echo warn >&2; pwd",
            s.dir.path(),
        ))
        .await
        .unwrap();
    assert_eq!(job.status, JobStatus::Active);
    assert_eq!(job.description, "Every second.");
    assert_eq!(job.timeout_ms, 60_000);
    assert!(job.next_run.is_some_and(|t| t > job.created_at));
    assert!(
        matches!(next_cron(&mut events).await, CronEvent::Created { job: j } if j.id == job.id)
    );

    let runs = finished_runs(&mut events, &job.id, 2).await;
    scheduler.stop().await;

    let history = s.engine.jobs().history(&job.id, None).await.unwrap();
    assert!(history.len() >= 2, "{history:?}");
    assert!(
        history
            .windows(2)
            .all(|w| w[0].started_at >= w[1].started_at),
        "newest first"
    );
    let dir = std::fs::canonicalize(s.dir.path()).unwrap();
    for run in &runs {
        assert_eq!(run.status, ExecutionStatus::Success, "{run:?}");
        assert_eq!(run.trigger, ExecutionTrigger::Schedule);
        assert_eq!(run.exit_code, Some(0));
        assert_eq!(run.stdout, format!("tick\n{}\n", dir.display()));
        assert_eq!(run.stderr, "warn\n");
        assert_eq!(run.error, None);
        assert!(run.ended_at.is_some() && run.duration_ms.is_some());
        assert!(history.contains(run), "stored as published");
    }
    assert!(runs[1].started_at > runs[0].started_at);

    let job = s.engine.jobs().by_name("tick").await.unwrap();
    assert_eq!(job.status, JobStatus::Active);
    assert!(job.run_count >= 2);
    assert_eq!(job.fail_count, 0);
    assert!(job.last_run.is_some_and(|l| l >= runs[1].started_at));
    assert!(job.next_run > job.last_run);
    assert_eq!(
        s.engine
            .jobs()
            .history(&job.id, Some(1))
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_paused_job_does_not_run_until_resumed() {
    let s = setup(vec![]).await;
    let mut events = s.engine.feeds().engine_events();
    let ws = s.dir.path();
    let scheduler = s.engine.jobs().start_scheduler().await.unwrap();
    let job = s
        .engine
        .jobs()
        .create(command_job("pausable", "* * * * * *", "true", ws))
        .await
        .unwrap();
    finished_runs(&mut events, &job.id, 1).await;

    let paused = s.engine.jobs().pause(&job.id).await.unwrap();
    assert_eq!(paused.status, JobStatus::Paused);
    assert_eq!(paused.next_run, None);
    // A witness job that runs every second: once it has run twice, at
    // least one whole second passed in which the paused job was due.
    let witness = s
        .engine
        .jobs()
        .create(command_job("witness", "* * * * * *", "true", ws))
        .await
        .unwrap();
    let mut paused_seen = false;
    let mut witness_runs = 0;
    while witness_runs < 2 {
        match next_cron(&mut events).await {
            CronEvent::Updated { job: j } if j.id == job.id => {
                paused_seen = j.status == JobStatus::Paused || paused_seen;
            }
            CronEvent::Started { execution } if execution.job_id == job.id => {
                assert!(!paused_seen, "a paused job started: {execution:?}");
            }
            CronEvent::Finished { execution } if execution.job_id == witness.id => {
                witness_runs += 1;
            }
            _ => {}
        }
    }
    assert!(paused_seen);
    assert_eq!(
        s.engine.jobs().get(&job.id).await.unwrap().status,
        JobStatus::Paused
    );
    let before = s.engine.jobs().history(&job.id, None).await.unwrap().len();

    // A manual run still works while paused, and keeps it paused.
    let manual = s.engine.jobs().run_now(&job.id).await.unwrap();
    assert_eq!(manual.trigger, ExecutionTrigger::Manual);
    assert_eq!(manual.status, ExecutionStatus::Success);
    assert_eq!(s.engine.jobs().get(&job.id).await.unwrap().next_run, None);

    let resumed = s.engine.jobs().resume(&job.id).await.unwrap();
    assert_eq!(resumed.status, JobStatus::Active);
    assert!(resumed.next_run.is_some());
    // Runs again on its schedule.
    loop {
        let run = finished_runs(&mut events, &job.id, 1).await.remove(0);
        if run.trigger == ExecutionTrigger::Schedule && run.started_at >= resumed.updated_at {
            assert_eq!(run.status, ExecutionStatus::Success);
            break;
        }
    }
    scheduler.stop().await;
    assert!(s.engine.jobs().history(&job.id, None).await.unwrap().len() >= before + 2);
}

#[tokio::test]
async fn a_job_past_its_timeout_is_killed_with_its_process_group() {
    let s = setup(vec![]).await;
    let mut job = command_job(
        "slow",
        "0 0 1 1 *",
        // A background child and a foreground child both outlive any sane
        // timeout; distinct durations name them (in a PID namespace of its
        // own, the job knows no pid the test could look up).
        "echo started; sleep 300.733 & sleep 301.733; echo never",
        s.dir.path(),
    );
    // Long enough for `sh` to start even on a loaded machine.
    job.timeout_ms = Some(1_500);
    let job = s.engine.jobs().create(job).await.unwrap();

    let run = s.engine.jobs().run_now(&job.id).await.unwrap();
    assert_eq!(run.status, ExecutionStatus::Timeout, "{run:?}");
    assert_eq!(run.exit_code, None);
    assert_eq!(run.stdout, "started\n");
    let error = run.error.as_deref().unwrap_or_default();
    assert!(error.contains("timed out after 1.5 s"), "{error}");
    assert!(error.contains("process group"), "{error}");

    all_gone(&["300.733", "301.733"]).await;
    let job = s.engine.jobs().get(&job.id).await.unwrap();
    assert_eq!((job.run_count, job.fail_count), (0, 1));
    assert_eq!(job.status, JobStatus::Active);
    assert_eq!(
        s.engine.jobs().history(&job.id, None).await.unwrap(),
        vec![run]
    );
}

#[tokio::test]
async fn deleting_a_running_job_cancels_its_run() {
    let s = setup(vec![]).await;
    let mut events = s.engine.feeds().engine_events();
    // The command says it is under way through a FIFO the test reads.
    let ready = s.dir.path().join("ready");
    nix::unistd::mkfifo(&ready, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let job = s
        .engine
        .jobs()
        .create(command_job(
            "doomed",
            "@yearly",
            // Distinct durations name its processes: in a PID namespace
            // of its own, the job knows no pid the test could look up.
            "echo up > ready; sleep 300.417 & sleep 301.417",
            s.dir.path(),
        ))
        .await
        .unwrap();
    let run = tokio::spawn({
        let engine = s.engine.clone();
        let id = job.id.clone();
        async move { engine.jobs().run_now(&id).await }
    });
    loop {
        if let CronEvent::Started { execution } = next_cron(&mut events).await {
            assert_eq!(execution.job_id, job.id);
            break;
        }
    }
    let up = tokio::task::spawn_blocking(move || std::fs::read_to_string(ready));
    let up = tokio::time::timeout(HANG_GUARD, up).await.unwrap().unwrap();
    assert_eq!(up.unwrap(), "up\n");
    assert_eq!(
        s.engine.jobs().get(&job.id).await.unwrap().status,
        JobStatus::Running
    );
    let again = s.engine.jobs().run_now(&job.id).await.unwrap_err();
    assert!(
        matches!(&again, EngineError::InvalidInput(m) if m.contains("already running")),
        "{again}"
    );

    s.engine.jobs().delete(&job.id).await.unwrap();
    let run = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("the run ends")
        .unwrap()
        .unwrap();
    assert_eq!(run.status, ExecutionStatus::Cancelled, "{run:?}");
    all_gone(&["300.417", "301.417"]).await;
    assert!(matches!(
        s.engine.jobs().history(&job.id, None).await,
        Err(EngineError::NotFound { .. })
    ));
}

#[tokio::test]
async fn failures_and_long_output_are_recorded() {
    let s = setup(vec![]).await;
    let job = s
        .engine
        .jobs()
        .create(command_job(
            "noisy",
            "@daily",
            "head -c 100000 /dev/zero | tr '\\0' a; echo; echo bad >&2; exit 3",
            s.dir.path(),
        ))
        .await
        .unwrap();
    let run = s.engine.jobs().run_now(&job.id).await.unwrap();
    assert_eq!(run.status, ExecutionStatus::Failed);
    assert_eq!(run.exit_code, Some(3));
    assert_eq!(run.stderr, "bad\n");
    assert_eq!(run.error.as_deref(), Some("the command exited with code 3"));
    assert!(run.stdout.contains(" bytes truncated ...]"), "a marker");
    assert!(run.stdout.len() < 40_000, "{}", run.stdout.len());
    assert!(run.stdout.starts_with("aaaa") && run.stdout.ends_with("aaaa\n"));

    // A working dir that went away fails the run with the reason.
    let gone = tempfile::tempdir().unwrap();
    let job = s
        .engine
        .jobs()
        .create(command_job("gone", "@daily", "true", gone.path()))
        .await
        .unwrap();
    drop(gone);
    let run = s.engine.jobs().run_now(&job.id).await.unwrap();
    assert_eq!(run.status, ExecutionStatus::Failed);
    let error = run.error.unwrap_or_default();
    assert!(error.contains("could not start `bash -c` in "), "{error}");
}

#[tokio::test]
async fn a_job_command_runs_with_the_login_profile_snapshot() {
    let s = setup(vec![]).await;
    let home = s.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join(".bashrc"),
        "echo ran >> \"$HOME/runs\"\nbackup() { echo \"backing up as $ROLE\"; }\nexport ROLE=nightly\n",
    )
    .unwrap();
    s.engine
        .set_command_env(BTreeMap::from([(
            "HOME".to_owned(),
            home.display().to_string(),
        )]))
        .unwrap();
    let job = s
        .engine
        .jobs()
        .create(command_job("backup", "@daily", "backup", s.dir.path()))
        .await
        .unwrap();
    for _ in 0..2 {
        let run = s.engine.jobs().run_now(&job.id).await.unwrap();
        assert_eq!(run.status, ExecutionStatus::Success, "{run:?}");
        assert_eq!(run.stdout, "backing up as nightly\n");
    }
    let runs = std::fs::read_to_string(home.join("runs")).unwrap();
    assert_eq!(
        runs.lines().count(),
        1,
        "the profile ran once for both runs"
    );
}

#[tokio::test]
async fn a_missed_run_runs_once_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let llm = MockLlm::start(Script::new(vec![])).unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let (job, stale) = {
        let engine = engine(dir.path(), &llm, Arc::new(SystemClock)).await;
        let job = engine
            .jobs()
            .create(command_job("every-5-min", "*/5 * * * *", "echo ran", &ws))
            .await
            .unwrap();
        // A run that was in progress when the server stopped.
        let stale = CronExecution {
            id: "stale-run".into(),
            job_id: job.id.clone(),
            status: ExecutionStatus::Running,
            trigger: ExecutionTrigger::Schedule,
            started_at: job.created_at,
            ended_at: None,
            duration_ms: None,
            exit_code: None,
            stdout: String::new(),
            stderr: String::new(),
            error: None,
            turn_id: None,
        };
        let store = SqliteStore::open(&dir.path().join("gantry.db"))
            .await
            .unwrap();
        store.put_execution(&stale).await.unwrap();
        store.close().await;
        engine.shutdown().await.expect("events stored");
        (job, stale)
    };

    // The server comes back two hours later: 24 runs were missed.
    let clock = Arc::new(Shifted(2 * 3600 * 1000));
    let engine = engine(dir.path(), &llm, clock.clone()).await;
    let mut events = engine.feeds().engine_events();
    let scheduler = engine.jobs().start_scheduler().await.unwrap();
    let witness = engine
        .jobs()
        .create(command_job("witness", "* * * * * *", "true", &ws))
        .await
        .unwrap();
    let mut missed = Vec::new();
    // Witness runs since the missed run finished: once the witness ran
    // twice after it, the scheduler had every chance to run it again.
    let mut witness_runs_after = 0;
    let mut witness_runs_before = 0;
    while missed.is_empty() || witness_runs_after < 2 {
        if let CronEvent::Finished { execution } = next_cron(&mut events).await {
            if execution.job_id == witness.id && missed.is_empty() {
                witness_runs_before += 1;
                assert!(witness_runs_before < 10, "the missed run never ran");
            } else if execution.job_id == witness.id {
                witness_runs_after += 1;
            } else if execution.job_id == job.id && execution.id != stale.id {
                missed.push(*execution);
            }
        }
    }
    scheduler.stop().await;

    assert_eq!(missed.len(), 1, "{missed:?}");
    assert_eq!(missed[0].trigger, ExecutionTrigger::Missed);
    assert_eq!(missed[0].status, ExecutionStatus::Success);
    assert_eq!(missed[0].stdout, "ran\n");
    let history = engine.jobs().history(&job.id, None).await.unwrap();
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[0], missed[0]);
    assert_eq!(history[1].id, stale.id);
    assert_eq!(history[1].status, ExecutionStatus::Cancelled);
    assert!(
        history[1]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("server stopped")),
        "{:?}",
        history[1]
    );
    let job = engine.jobs().get(&job.id).await.unwrap();
    assert_eq!((job.run_count, job.fail_count), (1, 1));
    assert!(
        job.next_run.is_some_and(|t| t > clock.now_ms()),
        "the next run counts from the restart: {job:?}"
    );
}

#[tokio::test]
async fn a_prompt_job_runs_a_turn_on_its_thread() {
    let s = setup(vec![
        Step::text("the daily summary"),
        Step::text("too late").with_delay_ms(30_000),
    ])
    .await;
    std::fs::create_dir(s.dir.path().join("ws")).unwrap();
    let thread = s
        .engine
        .threads()
        .create(CreateThread {
            cwd: s.dir.path().join("ws"),
            model: Some("test-model".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut events = s.engine.feeds().engine_events();
    let job = s
        .engine
        .jobs()
        .create(NewJob {
            name: "summary".into(),
            schedule: "every day at 9am".into(),
            action: JobAction::Prompt {
                thread_id: thread.id.clone(),
                prompt: "summarise the day".into(),
            },
            timeout_ms: None,
        })
        .await
        .unwrap();
    assert_eq!(job.schedule, "0 9 * * *");
    assert_eq!(job.description, "At 09:00.");

    let run = s.engine.jobs().run_now(&job.id).await.unwrap();
    assert_eq!(run.status, ExecutionStatus::Success, "{run:?}");
    assert_eq!(run.stdout, "the daily summary");
    let view = s.engine.threads().read(&thread.id).await.unwrap();
    assert_eq!(view.turns.len(), 1);
    assert_eq!(run.turn_id.as_ref(), Some(&view.turns[0].turn.id));
    assert_eq!(view.turns[0].turn.input, "summarise the day");
    // The events name the thread the job talks to.
    loop {
        let notice = tokio::time::timeout(HANG_GUARD, events.recv())
            .await
            .unwrap();
        if let Some(EngineEventNotice::Event(e)) = notice
            && let EngineEventKind::Cron(CronEvent::Started { .. }) = e.kind
        {
            assert_eq!(e.thread_id.as_ref(), Some(&thread.id));
            break;
        }
    }

    // The model takes too long the second time: the run times out and
    // its turn is interrupted.
    s.engine
        .jobs()
        .update(
            &job.id,
            JobUpdate {
                timeout_ms: Some(1_000),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let run = s.engine.jobs().run_now(&job.id).await.unwrap();
    assert_eq!(run.status, ExecutionStatus::Timeout, "{run:?}");
    let error = run.error.unwrap_or_default();
    assert!(error.contains("the turn was interrupted"), "{error}");
    let view = s.engine.threads().read(&thread.id).await.unwrap();
    assert_eq!(
        view.turns[1].turn.status,
        gantry_types::TurnStatus::Interrupted
    );
}

#[tokio::test]
async fn a_prompt_jobs_turn_refuses_what_would_ask_at_once() {
    // Nobody is there to approve: the command is refused and reported, and
    // the turn goes on, without waiting for the approval's timeout.
    let s = setup(vec![
        Step::tool_call("shell", serde_json::json!({"command": "touch asked.txt"})),
        Step::text("could not run it"),
    ])
    .await;
    let ws = s.dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let mut policy = gantry_types::ThreadPolicy {
        approval: gantry_types::ApprovalPolicy::Untrusted,
        ..Default::default()
    };
    // Long enough that a wait for it would end the run by its timeout.
    policy.confirmation.default_timeout_ms = 600_000;
    let thread = s
        .engine
        .threads()
        .create(CreateThread {
            cwd: ws.clone(),
            model: Some("test-model".into()),
            policy,
            ..Default::default()
        })
        .await
        .unwrap();
    let job = s
        .engine
        .jobs()
        .create(NewJob {
            name: "asks".into(),
            schedule: "every day at 9am".into(),
            action: JobAction::Prompt {
                thread_id: thread.id.clone(),
                prompt: "make the file".into(),
            },
            timeout_ms: Some(20_000),
        })
        .await
        .unwrap();
    let run = s.engine.jobs().run_now(&job.id).await.unwrap();
    assert_eq!(run.status, ExecutionStatus::Success, "{run:?}");
    assert_eq!(run.stdout, "could not run it");
    assert!(!ws.join("asked.txt").exists());
    let view = s.engine.threads().read(&thread.id).await.unwrap();
    let items = &view.turns[0].items;
    assert!(
        !items
            .iter()
            .any(|i| matches!(i.kind, gantry_types::ItemKind::Approval { .. })),
        "no approval was asked: {items:?}"
    );
    let refused = items
        .iter()
        .find_map(|i| i.tool_call.as_ref().and_then(|c| c.refused.clone()))
        .expect("the command is reported as refused");
    assert!(format!("{refused:?}").contains("unattended"), "{refused:?}");
}

#[tokio::test]
async fn jobs_are_managed_by_id_and_name_with_clear_errors() {
    let s = setup(vec![]).await;
    let ws = s.dir.path();
    let mut events = s.engine.feeds().engine_events();
    let job = s
        .engine
        .jobs()
        .create(command_job("backup", "every 15 minutes", "true", ws))
        .await
        .unwrap();
    assert_eq!(job.schedule, "*/15 * * * *");
    assert_eq!(job.description, "Every 15 minutes.");
    assert_eq!(s.engine.jobs().by_name("backup").await.unwrap(), job);
    assert_eq!(s.engine.jobs().list().await.unwrap(), vec![job.clone()]);

    let dup = s
        .engine
        .jobs()
        .create(command_job("backup", "@hourly", "true", ws))
        .await
        .unwrap_err();
    assert!(
        matches!(&dup, EngineError::InvalidInput(m) if m.contains("already exists")),
        "{dup}"
    );
    let bad = s
        .engine
        .jobs()
        .create(command_job("other", "61 * * * *", "true", ws))
        .await
        .unwrap_err();
    assert!(
        matches!(&bad, EngineError::InvalidInput(m) if m.contains("invalid cron expression")),
        "{bad}"
    );
    let bad = s
        .engine
        .jobs()
        .create(command_job("other", "@hourly", "true", &ws.join("nope")))
        .await
        .unwrap_err();
    assert!(
        matches!(&bad, EngineError::InvalidInput(m) if m.contains("not an existing directory")),
        "{bad}"
    );
    let mut zero = command_job("other", "@hourly", "true", ws);
    zero.timeout_ms = Some(0);
    assert!(matches!(
        s.engine.jobs().create(zero).await,
        Err(EngineError::InvalidInput(_))
    ));

    let updated = s
        .engine
        .jobs()
        .update(
            &job.id,
            JobUpdate {
                name: Some("nightly-backup".into()),
                schedule: Some("0 2 * * *".into()),
                timeout_ms: Some(5_000),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(updated.name, "nightly-backup");
    assert_eq!(updated.description, "At 02:00.");
    assert_eq!(updated.timeout_ms, 5_000);
    assert_eq!(updated.created_at, job.created_at);
    assert!(matches!(
        s.engine.jobs().by_name("backup").await,
        Err(EngineError::NotFound { what: "job", .. })
    ));

    let parsed = s.engine.jobs().parse_schedule("every 5 minutes").unwrap();
    assert_eq!(parsed.expression, "*/5 * * * *");
    assert!(matches!(
        s.engine.jobs().parse_schedule("whenever you like"),
        Err(EngineError::InvalidInput(_))
    ));

    s.engine.jobs().run_now(&job.id).await.unwrap();
    s.engine.jobs().delete(&job.id).await.unwrap();
    for missing in [
        s.engine.jobs().get(&job.id).await.map(|_| ()),
        s.engine.jobs().delete(&job.id).await,
        s.engine.jobs().run_now(&job.id).await.map(|_| ()),
        s.engine.jobs().history(&job.id, None).await.map(|_| ()),
    ] {
        assert!(
            matches!(&missing, Err(EngineError::NotFound { what: "job", name }) if *name == job.id),
            "{missing:?}"
        );
    }
    assert!(s.engine.jobs().list().await.unwrap().is_empty());

    let ops: Vec<&str> = {
        let mut ops = Vec::new();
        loop {
            let op = match next_cron(&mut events).await {
                CronEvent::Created { .. } => "created",
                CronEvent::Updated { .. } => "updated",
                CronEvent::Started { .. } => "started",
                CronEvent::Finished { .. } => "finished",
                CronEvent::Deleted { .. } => "deleted",
            };
            ops.push(op);
            if op == "deleted" {
                break ops;
            }
        }
    };
    assert_eq!(
        ops,
        ["created", "updated", "started", "finished", "deleted"]
    );
}

/// Waits (bounded) until no process has any of `args` among its arguments:
/// a job's, named by distinct `sleep` durations, since in its PID namespace
/// the job knows no pid the test could look up.
async fn all_gone(args: &[&str]) {
    let deadline = std::time::Instant::now() + HANG_GUARD;
    while args
        .iter()
        .any(|a| gantry_testkit::process::running_with_arg(a))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "a process of the job outlived it: {args:?}"
        );
        tokio::task::yield_now().await;
    }
}

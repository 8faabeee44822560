//! The methods of Pando's newer sources, checked against the engine they
//! act on: a delegation's thread and policy, the jobs `cronjob.reload`
//! leaves on the engine's cron.

use gantry_testkit::Step;
use gantry_types::ApprovalPolicy;
use gantry_types::cron::{JobAction, JobStatus};
use serde_json::{Value, json};

use crate::common::start;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegation_is_an_unattended_turn_with_approvals_off() {
    let setup = start(vec![Step::text("done delegating")]).await;
    let mut c = setup.client().await;
    let sub = setup.ws.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let result = c
        .result(
            "delegation.run",
            json!({"prompt": "go", "cwd": "sub", "correlation_id": "c-1"}),
        )
        .await;
    assert_eq!(result["output"], "done delegating");
    let id = gantry_types::ThreadId(result["session_id"].as_str().unwrap().to_owned());
    let view = setup.engine.threads().read(&id).await.unwrap();
    assert_eq!(view.thread.policy.approval, ApprovalPolicy::Never);
    assert_eq!(
        view.thread.cwd,
        sub.canonicalize().unwrap().to_string_lossy()
    );
    assert_eq!(view.thread.name.as_deref(), Some("delegated: c-1"));
    let status = c
        .result("delegation.status", json!({"correlation_id": "c-1"}))
        .await;
    assert_eq!(status["state"], "completed");
    assert_eq!(status["session_id"], result["session_id"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cronjob_reload_replaces_the_instances_jobs_only() {
    let setup = start(vec![]).await;
    let engine = &setup.engine;
    // Another instance's (or protocol's) job is left alone.
    let other = engine
        .threads()
        .create(gantry_core::CreateThread {
            cwd: setup.ws.clone(),
            ..gantry_core::CreateThread::default()
        })
        .await
        .unwrap();
    engine
        .jobs()
        .create(gantry_core::NewJob {
            name: "someone else's".to_owned(),
            schedule: "0 1 * * *".to_owned(),
            action: JobAction::Prompt {
                thread_id: other.id.clone(),
                prompt: "p".to_owned(),
            },
            timeout_ms: None,
        })
        .await
        .unwrap();
    let mut c = setup.client().await;
    let config = |jobs: Value| json!({"cron_jobs": {"enabled": true, "jobs": jobs}});
    let first = c
        .result(
            "cronjob.reload",
            config(json!([
                {"name": "a", "schedule": "0 3 * * *", "prompt": "tidy", "enabled": true, "timeout": "1h"},
                {"name": "b", "schedule": "0 4 * * *", "prompt": "report", "enabled": false}
            ])),
        )
        .await;
    assert_eq!(first, json!({"jobs": 2, "scheduler": true}));
    let ours = |jobs: Vec<gantry_types::cron::CronJob>| -> Vec<_> {
        jobs.into_iter()
            .filter(|j| j.name.starts_with("pando:"))
            .collect()
    };
    let jobs = ours(engine.jobs().list().await.unwrap());
    assert_eq!(jobs.len(), 2);
    let a = jobs.iter().find(|j| j.name.ends_with(":a")).unwrap();
    let b = jobs.iter().find(|j| j.name.ends_with(":b")).unwrap();
    assert_eq!((a.status, b.status), (JobStatus::Active, JobStatus::Paused));
    assert_eq!(a.timeout_ms, 3_600_000);
    let JobAction::Prompt { thread_id, prompt } = &a.action else {
        panic!("a prompt job: {a:?}");
    };
    assert_eq!(prompt, "tidy");
    let a_thread = thread_id.clone();

    // Replaced: `a` keeps its thread (same directory, no model given), `b` goes.
    c.result(
        "cronjob.reload",
        config(
            json!([{"name": "a", "schedule": "0 5 * * *", "prompt": "tidy more", "enabled": true}]),
        ),
    )
    .await;
    let jobs = ours(engine.jobs().list().await.unwrap());
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].schedule, "0 5 * * *");
    let JobAction::Prompt { thread_id, .. } = &jobs[0].action else {
        panic!("a prompt job");
    };
    assert_eq!(thread_id, &a_thread);
    assert!(
        engine
            .jobs()
            .list()
            .await
            .unwrap()
            .iter()
            .any(|j| j.name == "someone else's")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloads_at_once_leave_one_set_of_jobs_not_both() {
    let setup = start(vec![]).await;
    let (mut left, mut right) = (setup.client().await, setup.client().await);
    let set = |tag: &str| {
        let jobs: Vec<Value> = (0..4)
            .map(|i| {
                json!({"name": format!("{tag}{i}"), "schedule": "0 3 * * *",
                "prompt": "p", "enabled": true})
            })
            .collect();
        json!({"cron_jobs": {"enabled": true, "jobs": jobs}})
    };
    for round in 0..5 {
        let (l, r) = tokio::join!(
            left.result("cronjob.reload", set("l")),
            right.result("cronjob.reload", set("r")),
        );
        assert_eq!((l["jobs"].as_i64(), r["jobs"].as_i64()), (Some(4), Some(4)));
        let mut names: Vec<String> = setup
            .engine
            .jobs()
            .list()
            .await
            .unwrap()
            .into_iter()
            .filter_map(|j| j.name.rsplit(':').next().map(str::to_owned))
            .collect();
        names.sort();
        assert!(
            names == ["l0", "l1", "l2", "l3"] || names == ["r0", "r1", "r2", "r3"],
            "round {round}: one reload's jobs, whole: {names:?}"
        );
    }
}

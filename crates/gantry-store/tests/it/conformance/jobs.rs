//! Conformance cases for scheduled jobs and their history.

use gantry_store::{Store, StoreError};
use gantry_types::ThreadId;
use gantry_types::cron::{
    CronExecution, CronJob, ExecutionStatus, ExecutionTrigger, JobAction, JobStatus,
};

fn job(id: &str, name: &str) -> CronJob {
    CronJob {
        id: id.into(),
        name: name.into(),
        schedule: "*/15 * * * *".into(),
        description: "Every 15 minutes".into(),
        action: JobAction::Command {
            command: "echo 'hi ✓' && exit 3".into(),
            cwd: Some("/work/ws".into()),
        },
        timeout_ms: 60_000,
        status: JobStatus::Active,
        created_at: 1_700_000_000_000,
        updated_at: 1_700_000_000_500,
        last_run: Some(1_700_000_000_100),
        next_run: Some(1_700_000_900_000),
        run_count: 4,
        fail_count: 1,
    }
}

fn execution(id: &str, job_id: &str, started_at: i64, status: ExecutionStatus) -> CronExecution {
    CronExecution {
        id: id.into(),
        job_id: job_id.into(),
        status,
        trigger: ExecutionTrigger::Schedule,
        started_at,
        ended_at: status.is_final().then_some(started_at + 20),
        duration_ms: status.is_final().then_some(20),
        exit_code: Some(3),
        stdout: "hi ✓\n".into(),
        stderr: "oops\n".into(),
        error: Some("exit code 3".into()),
        turn_id: None,
    }
}

/// Jobs come back exactly as stored, by id and by name, listed by name;
/// a put with the same id replaces; a delete happens once.
pub(crate) async fn jobs_crud(store: &dyn Store) {
    assert!(store.jobs().await.unwrap().is_empty());
    let b = job("id-1", "b-backup");
    let mut a = job("id-2", "a-report");
    a.action = JobAction::Prompt {
        thread_id: ThreadId::from("thread-1"),
        prompt: "summarise the day".into(),
    };
    a.last_run = None;
    a.next_run = None;
    a.status = JobStatus::Paused;
    store.put_job(&b).await.unwrap();
    store.put_job(&a).await.unwrap();
    assert_eq!(store.jobs().await.unwrap(), vec![a.clone(), b.clone()]);
    assert_eq!(store.job("id-1").await.unwrap(), Some(b.clone()));
    assert_eq!(
        store.job_by_name("a-report").await.unwrap(),
        Some(a.clone())
    );
    assert_eq!(store.job("nope").await.unwrap(), None);
    assert_eq!(store.job_by_name("nope").await.unwrap(), None);

    // Renaming through a replace frees the old name.
    let mut b2 = b.clone();
    b2.name = "c-backup".into();
    b2.run_count = 5;
    store.put_job(&b2).await.unwrap();
    assert_eq!(store.job_by_name("b-backup").await.unwrap(), None);
    assert_eq!(store.job("id-1").await.unwrap(), Some(b2.clone()));
    assert_eq!(store.jobs().await.unwrap(), vec![a.clone(), b2]);

    assert!(store.delete_job("id-1").await.unwrap());
    assert!(!store.delete_job("id-1").await.unwrap());
    assert_eq!(store.jobs().await.unwrap(), vec![a]);
}

/// Two jobs cannot share a name; the failed put changes nothing.
pub(crate) async fn job_names_unique(store: &dyn Store) {
    let first = job("id-1", "nightly");
    store.put_job(&first).await.unwrap();
    let err = store.put_job(&job("id-2", "nightly")).await.unwrap_err();
    assert!(matches!(err, StoreError::Database(_)), "{err:?}");
    assert_eq!(store.jobs().await.unwrap(), vec![first]);
    assert_eq!(store.job("id-2").await.unwrap(), None);
}

/// History is newest first, limited, updated in place; unfinished runs are
/// found across jobs; a job's history goes with it.
pub(crate) async fn job_history(store: &dyn Store) {
    store.put_job(&job("j1", "one")).await.unwrap();
    store.put_job(&job("j2", "two")).await.unwrap();
    let runs = [
        execution("e1", "j1", 100, ExecutionStatus::Success),
        execution("e2", "j1", 300, ExecutionStatus::Timeout),
        execution("e3", "j1", 200, ExecutionStatus::Failed),
        execution("e4", "j2", 150, ExecutionStatus::Running),
    ];
    for run in &runs {
        store.put_execution(run).await.unwrap();
    }
    let ids = |v: Vec<CronExecution>| v.into_iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.executions("j1", 10).await.unwrap()),
        ["e2", "e3", "e1"]
    );
    assert_eq!(ids(store.executions("j1", 2).await.unwrap()), ["e2", "e3"]);
    assert_eq!(
        store.executions("j2", 10).await.unwrap(),
        vec![runs[3].clone()]
    );
    assert!(store.executions("nope", 10).await.unwrap().is_empty());

    // A run that started, then finished: one row, the last version.
    let mut late = execution("e5", "j1", 400, ExecutionStatus::Running);
    late.ended_at = None;
    store.put_execution(&late).await.unwrap();
    assert_eq!(
        ids(store.unfinished_executions().await.unwrap()),
        ["e4", "e5"]
    );
    late.status = ExecutionStatus::Cancelled;
    late.ended_at = Some(450);
    store.put_execution(&late).await.unwrap();
    assert_eq!(store.executions("j1", 1).await.unwrap(), vec![late]);
    assert_eq!(ids(store.unfinished_executions().await.unwrap()), ["e4"]);

    // Deleting a job deletes its history and nothing else.
    assert!(store.delete_job("j1").await.unwrap());
    assert!(store.executions("j1", 10).await.unwrap().is_empty());
    assert_eq!(store.executions("j2", 10).await.unwrap().len(), 1);
}

/// An execution of a job that does not exist is refused.
pub(crate) async fn execution_needs_its_job(store: &dyn Store) {
    let err = store
        .put_execution(&execution("e1", "ghost", 1, ExecutionStatus::Success))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Database(_)), "{err:?}");
    assert!(store.executions("ghost", 10).await.unwrap().is_empty());
}

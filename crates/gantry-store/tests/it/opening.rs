//! [`Opening`]: the conformance suite through a store opened in the
//! background, and what a new store answers before it is made.

use crate::conformance;

use futures_util::FutureExt;
use gantry_store::sqlite::new_settings;
use gantry_store::{Commit, Opening, SqliteStore, Store, StoreError};
use gantry_types::ThreadStatus;
use gantry_types::memory::{MemoryId, MemoryScope};
use tempfile::TempDir;
use tokio::sync::oneshot;

use conformance::fixtures::{all_kinds_log, thread, thread_id};

async fn fixture() -> Option<(Opening, TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_in_background(dir.path().join("gantry.db"));
    Some((store, dir))
}

// Each case starts on a new file, so its first reads are answered before
// the store is made and every later one by the store.
conformance_tests!(fixture);

/// A new store whose making waits for `gate`.
fn gated(dir: &TempDir) -> (Opening, oneshot::Sender<()>) {
    let (open, gate) = oneshot::channel::<()>();
    let path = dir.path().join("gantry.db");
    let store = Opening::new_store(
        move || async move {
            let _ = gate.await;
            SqliteStore::open(&path).await
        },
        new_settings(),
    );
    (store, open)
}

#[tokio::test]
async fn a_new_store_answers_reads_at_once_until_written_then_waits_for_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (store, open) = gated(&dir);
    let id = thread_id(1);

    // Answered on the first poll: nothing waits for the file.
    assert_eq!(
        store.last_cursor().now_or_never().map(Result::unwrap),
        Some(0)
    );
    assert_eq!(
        store.providers().now_or_never().map(Result::unwrap),
        Some(vec![])
    );
    assert_eq!(
        store.running_threads().now_or_never().map(Result::unwrap),
        Some(vec![])
    );
    assert_eq!(
        store.thread(&id).now_or_never().map(Result::unwrap),
        Some(None)
    );
    assert_eq!(
        store
            .setting("default_model")
            .now_or_never()
            .map(Result::unwrap),
        Some(None)
    );
    assert_eq!(
        store
            .setting("log_format_version")
            .now_or_never()
            .map(Result::unwrap),
        Some(Some("1".to_owned()))
    );
    assert!(!dir.path().join("gantry.db").exists());

    // Once a write has begun, reads wait for the store, so they see it.
    let events = all_kinds_log(&id);
    let commit = Commit {
        events: events.clone(),
        threads: vec![thread(&id, ThreadStatus::Idle, false)],
    };
    let mut write = store.commit(&commit);
    assert!(
        (&mut write).now_or_never().is_none(),
        "the file is not made yet"
    );
    assert!(
        store.events(&id, 1).now_or_never().is_none(),
        "a read after a write began must wait for the store"
    );
    open.send(()).unwrap();
    write.await.unwrap();
    assert_eq!(store.events(&id, 1).await.unwrap().len(), events.len());
    assert!(store.last_cursor().await.unwrap() > 0);
    assert!(dir.path().join("gantry.db").is_file());
}

/// What the background store answers before it is made is what the new
/// store answers once it is: the answers cannot drift from the schema.
#[tokio::test]
async fn its_answers_before_the_file_is_made_are_the_new_stores() {
    let dir = tempfile::tempdir().unwrap();
    let (opening, _open) = gated(&dir);
    let other = tempfile::tempdir().unwrap();
    let path = other.path().join("gantry.db");
    let made = SqliteStore::open(&path).await.unwrap();
    let (a, b): (&dyn Store, &dyn Store) = (&opening, &made);
    let id = thread_id(7);
    let scopes = [MemoryScope::Thread(id.clone())];

    assert_eq!(
        a.last_cursor().await.unwrap(),
        b.last_cursor().await.unwrap()
    );
    assert_eq!(
        a.events(&id, 0).await.unwrap(),
        b.events(&id, 0).await.unwrap()
    );
    assert_eq!(
        a.events_after(0, 10).await.unwrap(),
        b.events_after(0, 10).await.unwrap()
    );
    assert_eq!(a.thread(&id).await.unwrap(), b.thread(&id).await.unwrap());
    assert_eq!(
        a.running_threads().await.unwrap(),
        b.running_threads().await.unwrap()
    );
    assert_eq!(a.providers().await.unwrap(), b.providers().await.unwrap());
    assert_eq!(a.agents().await.unwrap(), b.agents().await.unwrap());
    assert_eq!(
        a.agent(&"a1".into()).await.unwrap(),
        b.agent(&"a1".into()).await.unwrap()
    );
    assert_eq!(a.jobs().await.unwrap(), b.jobs().await.unwrap());
    assert_eq!(a.job("j").await.unwrap(), b.job("j").await.unwrap());
    assert_eq!(
        a.job_by_name("j").await.unwrap(),
        b.job_by_name("j").await.unwrap()
    );
    assert_eq!(
        a.executions("j", 5).await.unwrap(),
        b.executions("j", 5).await.unwrap()
    );
    assert_eq!(
        a.unfinished_executions().await.unwrap(),
        b.unfinished_executions().await.unwrap()
    );
    assert_eq!(
        a.memory_stats(&scopes).await.unwrap(),
        b.memory_stats(&scopes).await.unwrap()
    );
    let memory = MemoryId::from("m1");
    assert_eq!(
        a.touch_memory(&scopes, &memory, 1).await.unwrap(),
        b.touch_memory(&scopes, &memory, 1).await.unwrap()
    );
    // Every setting the new store holds, and no other.
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let mut stored: Vec<(String, String)> = sqlx::query_as("SELECT key, value FROM settings")
        .fetch_all(&pool)
        .await
        .unwrap();
    stored.sort();
    assert_eq!(stored, new_settings().to_vec());
    for (key, value) in &stored {
        assert_eq!(a.setting(key).await.unwrap().as_ref(), Some(value));
    }
    assert_eq!(a.setting("default_model").await.unwrap(), None);
}

#[tokio::test]
async fn a_store_that_cannot_be_made_fails_its_writes_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let store = SqliteStore::open_in_background(file.join("gantry.db"));

    let Err(why) = store.ready().await.map(drop) else {
        panic!("a store under a file cannot be made");
    };
    let why = why.to_string();
    assert!(why.contains("not-a-dir"), "{why}");
    // Reads before any write still answer: the store would hold nothing.
    assert!(store.providers().await.unwrap().is_empty());
    let id = thread_id(1);
    let commit = Commit {
        events: all_kinds_log(&id),
        threads: vec![thread(&id, ThreadStatus::Idle, false)],
    };
    match store.commit(&commit).await {
        Err(StoreError::Database(e)) => assert_eq!(format!("store: {e}"), why),
        other => panic!("the commit must fail with the opening's error: {other:?}"),
    }
    assert!(
        store.thread(&id).await.is_err(),
        "after a write, reads wait for the store"
    );
}

//! The conformance suite against [`SqliteStore`] on a real file, plus what only
//! a file can show: durability across reopen, migrations, corrupt rows.

mod conformance;

use gantry_store::sqlite::MIGRATOR;
use gantry_store::{Commit, SqliteStore, Store, StoreError, ThreadQuery};
use gantry_types::ThreadStatus;
use tempfile::TempDir;

use conformance::fixtures::{all_kinds_log, archived_event, thread, thread_id};

async fn fixture() -> (SqliteStore, TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("gantry.db"))
        .await
        .unwrap();
    (store, dir)
}

conformance_tests!(fixture);

#[tokio::test]
async fn creates_parent_directories() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/gantry.db");
    let store = SqliteStore::open(&path).await.unwrap();
    store.close().await;
    assert!(path.is_file());
}

#[tokio::test]
async fn data_survives_reopen_and_migrations_are_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gantry.db");
    let id = thread_id(1);
    let events = all_kinds_log(&id);
    let t = thread(&id, ThreadStatus::Running, true);

    let store = SqliteStore::open(&path).await.unwrap();
    store
        .commit(&Commit {
            events: events.clone(),
            threads: vec![t.clone()],
        })
        .await
        .unwrap();
    store.close().await;

    for _ in 0..2 {
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(store.events(&id, 0).await.unwrap(), events);
        assert_eq!(store.thread(&id).await.unwrap(), Some(t.clone()));
        assert_eq!(
            store.running_threads().await.unwrap(),
            std::slice::from_ref(&id)
        );
        let page = store
            .list_threads(&ThreadQuery {
                archived: Some(true),
                ..ThreadQuery::default()
            })
            .await
            .unwrap();
        assert_eq!(page.threads, std::slice::from_ref(&t));
        store.close().await;
    }

    // Every migration applied exactly once.
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let applied: Vec<(i64,)> =
        sqlx::query_as("SELECT version FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&pool)
            .await
            .unwrap();
    let expected: Vec<(i64,)> = MIGRATOR.iter().map(|m| (m.version,)).collect();
    assert_eq!(applied, expected);
    let mode: (String,) = sqlx::query_as("PRAGMA journal_mode")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(mode.0, "wal");
    pool.close().await;
}

#[tokio::test]
async fn corrupt_rows_are_errors_naming_the_row() {
    let (store, dir) = fixture().await;
    let id = thread_id(1);
    store
        .commit(&Commit {
            events: (1..=3).map(|s| archived_event(&id, s)).collect(),
            threads: vec![thread(&id, ThreadStatus::Idle, false)],
        })
        .await
        .unwrap();

    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        dir.path().join("gantry.db").display()
    ))
    .await
    .unwrap();
    sqlx::query("UPDATE events SET payload = '{\"type\":\"nope\"}' WHERE seq = 2")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE threads SET data = 'not json'")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    let err = store.events(&id, 0).await.unwrap_err();
    let StoreError::Corrupt(msg) = &err else {
        panic!("{err:?}")
    };
    assert!(msg.contains(id.as_str()) && msg.contains("seq 2"), "{msg}");
    assert!(matches!(
        store.all_events(0).await,
        Err(StoreError::Corrupt(_))
    ));
    // Rows before the bad one are still readable on their own.
    assert_eq!(store.events(&id, 3).await.unwrap().len(), 1);

    let err = store.thread(&id).await.unwrap_err();
    let StoreError::Corrupt(msg) = &err else {
        panic!("{err:?}")
    };
    assert!(msg.contains(id.as_str()), "{msg}");
    assert!(matches!(
        store.list_threads(&ThreadQuery::default()).await,
        Err(StoreError::Corrupt(_))
    ));
}

#[tokio::test]
async fn large_batches_use_every_chunk_size() {
    let (store, _dir) = fixture().await;
    let id = thread_id(1);
    // 255 = 128 + 64 + 32 + 16 + 8 + 4 + 2 + 1.
    let events: Vec<_> = (1..=255).map(|s| archived_event(&id, s)).collect();
    store
        .commit(&Commit {
            events: events.clone(),
            threads: vec![],
        })
        .await
        .unwrap();
    let more: Vec<_> = (256..=600).map(|s| archived_event(&id, s)).collect();
    store
        .commit(&Commit {
            events: more.clone(),
            threads: vec![],
        })
        .await
        .unwrap();
    let got = store.events(&id, 0).await.unwrap();
    assert_eq!(got.len(), 600);
    assert_eq!(got[..255], events[..]);
    assert_eq!(got[255..], more[..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commits_and_reads() {
    let (store, _dir) = fixture().await;
    let store = std::sync::Arc::new(store);
    let writers: Vec<_> = (1..=4)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                let id = thread_id(t);
                for batch in 0..10u64 {
                    let events = (1..=20)
                        .map(|s| archived_event(&id, batch * 20 + s))
                        .collect();
                    let threads = vec![thread(&id, ThreadStatus::Running, false)];
                    store.commit(&Commit { events, threads }).await.unwrap();
                    store.all_events(0).await.unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    assert_eq!(store.all_events(0).await.unwrap().len(), 800);
    assert_eq!(store.running_threads().await.unwrap().len(), 4);
}

#[tokio::test]
async fn providers_and_settings_survive_reopen() {
    use gantry_types::{ProviderConfig, ProviderKind};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gantry.db");
    let mut p = ProviderConfig::new("local", ProviderKind::OpenaiChat);
    p.base_url = Some("http://localhost:11434/v1".into());
    let store = SqliteStore::open(&path).await.unwrap();
    store.put_provider(&p).await.unwrap();
    store
        .put_setting("default_model", "local/qwen3-coder")
        .await
        .unwrap();
    store.close().await;

    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(store.providers().await.unwrap(), vec![p]);
    assert_eq!(
        store.setting("default_model").await.unwrap().as_deref(),
        Some("local/qwen3-coder")
    );
    store.close().await;
}

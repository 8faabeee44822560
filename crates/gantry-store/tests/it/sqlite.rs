//! The conformance suite against [`SqliteStore`] on a real file, plus what only
//! a file can show: durability across reopen, migrations, corrupt rows.

use crate::conformance;

use std::path::PathBuf;

use gantry_store::sqlite::{LOG_FORMAT_VERSION, MIGRATOR};
use gantry_store::{Commit, SqliteStore, Store, StoreError, ThreadQuery};
use gantry_types::ThreadStatus;
use serde_json::{Value, json};
use tempfile::TempDir;

use conformance::fixtures::{all_kinds_log, archived_event, thread, thread_id, without_cursors};

async fn fixture() -> (SqliteStore, TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("gantry.db"))
        .await
        .unwrap();
    (store, dir)
}

async fn some_fixture() -> Option<(SqliteStore, TempDir)> {
    Some(fixture().await)
}

conformance_tests!(some_fixture);

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
        assert_eq!(without_cursors(store.events(&id, 0).await.unwrap()), events);
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

/// A database's schema text, the migrations recorded (all but their timing
/// columns) and the settings the migrations wrote.
type Migrated = (
    Vec<(String, String, Option<String>)>,
    Vec<(i64, String, bool, Vec<u8>)>,
    Vec<(String, String)>,
);

async fn migrated(conn: &mut sqlx::SqliteConnection) -> Migrated {
    (
        sqlx::query_as("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
            .fetch_all(&mut *conn)
            .await
            .unwrap(),
        sqlx::query_as(
            "SELECT version, description, success, checksum FROM _sqlx_migrations ORDER BY version",
        )
        .fetch_all(&mut *conn)
        .await
        .unwrap(),
        sqlx::query_as("SELECT key, value FROM settings ORDER BY key")
            .fetch_all(&mut *conn)
            .await
            .unwrap(),
    )
}

#[tokio::test]
async fn a_new_store_file_is_what_the_migrator_makes_and_the_migrator_then_applies_nothing() {
    use sqlx::ConnectOptions;
    let dir = tempfile::tempdir().unwrap();
    let options = |name: &str| {
        sqlx::sqlite::SqliteConnectOptions::new()
            .filename(dir.path().join(name))
            .create_if_missing(true)
    };
    let mut reference = options("reference.db").connect().await.unwrap();
    MIGRATOR.run(&mut reference).await.unwrap();
    let expected = migrated(&mut reference).await;
    assert_eq!(expected.1.len(), MIGRATOR.iter().count());

    SqliteStore::open(&dir.path().join("gantry.db"))
        .await
        .unwrap()
        .close()
        .await;
    let mut made = options("gantry.db").connect().await.unwrap();
    assert_eq!(migrated(&mut made).await, expected);

    let schema_version = "PRAGMA schema_version";
    let before: i64 = sqlx::query_scalar(schema_version)
        .fetch_one(&mut made)
        .await
        .unwrap();
    MIGRATOR.run(&mut made).await.unwrap();
    let after: i64 = sqlx::query_scalar(schema_version)
        .fetch_one(&mut made)
        .await
        .unwrap();
    assert_eq!(after, before);
    assert_eq!(migrated(&mut made).await, expected);
}

#[tokio::test]
async fn corrupt_rows_are_errors_naming_the_row_and_listings_leave_them_out() {
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
    // An all-threads replay leaves the unreadable row out and goes on.
    let replay = store.events_after(0, 10).await.unwrap();
    assert_eq!(replay.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 3]);
    // Rows before the bad one are still readable on their own.
    assert_eq!(store.events(&id, 3).await.unwrap().len(), 1);

    let err = store.thread(&id).await.unwrap_err();
    let StoreError::Corrupt(msg) = &err else {
        panic!("{err:?}")
    };
    assert!(msg.contains(id.as_str()), "{msg}");
    // A listing leaves the unreadable thread out (and reports it) rather
    // than failing for every thread.
    let page = store.list_threads(&ThreadQuery::default()).await.unwrap();
    assert!(page.threads.is_empty());
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

// The stored log's format is owned: golden rows, as this release writes
// every kind of event, are read back as the same events, and today's
// encoding still writes exactly those rows. Renaming a field or a variant
// fails here; such a change needs a migration that rewrites old rows and a
// new `log_format_version`.
// `GANTRY_BLESS=1 cargo nextest run -p gantry-store -E 'test(golden)'`
// rewrites the golden file after a deliberate, migrated change.

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/log_v{LOG_FORMAT_VERSION}.jsonl"))
}

/// The `events` rows of `db`, as JSON lines (cursor order).
async fn rows(db: &std::path::Path) -> Vec<Value> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    type Row = (
        String,
        i64,
        i64,
        Option<String>,
        Option<String>,
        String,
        String,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT thread_id, seq, ts, turn_id, item_id, kind, payload FROM events ORDER BY pos",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    rows.into_iter()
        .map(|(thread_id, seq, ts, turn_id, item_id, kind, payload)| {
            json!({
                "thread_id": thread_id, "seq": seq, "ts": ts, "turn_id": turn_id,
                "item_id": item_id, "kind": kind,
                "payload": serde_json::from_str::<Value>(&payload).unwrap(),
            })
        })
        .collect()
}

#[tokio::test]
async fn the_golden_log_reads_back_and_todays_encoding_writes_it_unchanged() {
    let id = thread_id(1);
    let log = all_kinds_log(&id);

    // Today's encoding of every kind of event.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gantry.db");
    let store = SqliteStore::open(&db).await.unwrap();
    store
        .commit(&Commit {
            events: log.clone(),
            threads: vec![],
        })
        .await
        .unwrap();
    store.close().await;
    let written = rows(&db).await;
    if std::env::var_os("GANTRY_BLESS").is_some() {
        let text: Vec<String> = written.iter().map(Value::to_string).collect();
        std::fs::write(golden_path(), text.join("\n") + "\n").unwrap();
    }
    let golden: Vec<Value> = std::fs::read_to_string(golden_path())
        .expect("the golden log of this format version")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        written, golden,
        "today's encoding differs from the golden log"
    );

    // The golden rows, inserted as an older release left them, read back.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gantry.db");
    SqliteStore::open(&db).await.unwrap().close().await;
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    for (row, pos) in golden.iter().zip(1i64..) {
        sqlx::query("INSERT INTO events (thread_id, seq, ts, turn_id, item_id, kind, payload, pos) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
            .bind(row["thread_id"].as_str())
            .bind(row["seq"].as_i64())
            .bind(row["ts"].as_i64())
            .bind(row["turn_id"].as_str())
            .bind(row["item_id"].as_str())
            .bind(row["kind"].as_str())
            .bind(row["payload"].to_string())
            .bind(pos)
            .execute(&pool)
            .await
            .unwrap();
    }
    pool.close().await;
    let store = SqliteStore::open(&db).await.unwrap();
    assert_eq!(without_cursors(store.events(&id, 1).await.unwrap()), log);
}

#[tokio::test]
async fn a_log_from_a_newer_format_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gantry.db");
    SqliteStore::open(&db).await.unwrap().close().await;
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    sqlx::query("UPDATE settings SET value = '99' WHERE key = 'log_format_version'")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let err = SqliteStore::open(&db).await.unwrap_err().to_string();
    assert!(err.contains("format version 99"), "{err}");
}

/// Deleting most threads leaves free pages in the file; a full compaction
/// gives them back to the disk, and after switching to incremental
/// auto-vacuum, an incremental one gives back the next deletions' pages.
#[tokio::test]
async fn compacting_gives_deleted_threads_space_back_to_the_disk() {
    use gantry_store::{CompactMode, CompactRequest};

    let (store, dir) = fixture().await;
    let file = dir.path().join("gantry.db");
    fill(&store, 1).await;
    for n in 1..20 {
        assert!(store.delete_thread(&thread_id(n)).await.unwrap());
    }
    let full = store
        .compact(CompactRequest {
            enable_auto_vacuum: true,
            ..CompactRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(full.mode, CompactMode::Full);
    assert!(full.size_after < full.size_before, "{full:?}");
    assert!(full.freed() > 0);
    // The WAL was checkpointed: the file is the size the database says.
    assert_eq!(std::fs::metadata(&file).unwrap().len(), full.size_after);

    fill(&store, 100).await;
    for n in 100..119 {
        assert!(store.delete_thread(&thread_id(n)).await.unwrap());
    }
    let incremental = store
        .compact(CompactRequest {
            incremental: true,
            ..CompactRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(incremental.mode, CompactMode::Incremental);
    assert!(incremental.freed() > 0, "{incremental:?}");
    assert_eq!(store.events(&thread_id(20), 1).await.unwrap().len(), 100);
    assert_eq!(store.events(&thread_id(119), 1).await.unwrap().len(), 100);
    store.close().await;
}

/// Twenty threads of 100 events each, from thread `from` on.
async fn fill(store: &SqliteStore, from: u32) {
    for n in from..from + 20 {
        let id = thread_id(n);
        let commit = Commit {
            events: (1..=100).map(|seq| archived_event(&id, seq)).collect(),
            threads: vec![thread(&id, ThreadStatus::Idle, true)],
        };
        store.commit(&commit).await.unwrap();
    }
}

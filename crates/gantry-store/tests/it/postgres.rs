//! The conformance suite against [`PostgresStore`], each case on a fresh
//! database (`gantry_test_<uuid>`, dropped after it), plus what only a
//! shared server can show: commits from several stores (processes) at once
//! keep cursors dense and in commit order, data survives reopening, a
//! newer log format is refused.

use std::sync::Arc;

use gantry_store::{Commit, PostgresStore, Store};
use gantry_testkit::postgres::TestDatabase;
use gantry_types::{ProviderConfig, ProviderKind, ThreadStatus};
use tempfile::TempDir;

use crate::conformance::fixtures::{
    all_kinds_log, archived_event, thread, thread_id, without_cursors,
};

/// The store on a fresh database, its secret key in a temp dir.
pub(crate) async fn fixture() -> Option<(PostgresStore, (TestDatabase, TempDir))> {
    let db = TestDatabase::create().await?;
    let dir = tempfile::tempdir().unwrap();
    let store = PostgresStore::open(&db.url(), &dir.path().join("secret.key"))
        .await
        .unwrap();
    Some((store, (db, dir)))
}

conformance_tests!(fixture);

#[tokio::test]
async fn data_survives_reopen_and_migrations_are_idempotent() {
    let Some((store, (db, dir))) = fixture().await else {
        return;
    };
    let id = thread_id(1);
    let events = all_kinds_log(&id);
    let t = thread(&id, ThreadStatus::Running, true);
    store
        .commit(&Commit {
            events: events.clone(),
            threads: vec![t.clone()],
        })
        .await
        .unwrap();
    store.close().await;
    for _ in 0..2 {
        let store = PostgresStore::open(&db.url(), &dir.path().join("secret.key"))
            .await
            .unwrap();
        assert_eq!(without_cursors(store.events(&id, 0).await.unwrap()), events);
        assert_eq!(store.thread(&id).await.unwrap(), Some(t.clone()));
        assert_eq!(store.last_cursor().await.unwrap(), events.len() as u64);
        store.close().await;
    }
}

/// Four stores on one database, as four processes would be, each with
/// writers of its own: every commit gets cursors right after the previous
/// one's, and a reader never sees a later cursor without the earlier ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_stores_keep_cursors_dense_and_in_commit_order() {
    let Some((first, (db, dir))) = fixture().await else {
        return;
    };
    let mut stores = vec![Arc::new(first)];
    for _ in 1..4 {
        let store = PostgresStore::open(&db.url(), &dir.path().join("secret.key"))
            .await
            .unwrap();
        stores.push(Arc::new(store));
    }
    let writers: Vec<_> = (1..=8u32)
        .map(|t| {
            let store = stores[t as usize % stores.len()].clone();
            tokio::spawn(async move {
                let id = thread_id(t);
                let mut ends = Vec::new();
                let mut seq = 0;
                for batch in 0..10u64 {
                    let events = (0..=batch % 5)
                        .map(|_| {
                            seq += 1;
                            archived_event(&id, seq)
                        })
                        .collect();
                    let threads = vec![thread(&id, ThreadStatus::Running, false)];
                    ends.push(store.commit(&Commit { events, threads }).await.unwrap());
                    // Whatever a reader sees is a prefix of the log: no gap.
                    let seen = store.events_after(0, 100_000).await.unwrap();
                    let cursors: Vec<u64> = seen.iter().map(|e| e.cursor).collect();
                    assert_eq!(cursors, (1..=cursors.len() as u64).collect::<Vec<_>>());
                    assert!(cursors.len() as u64 >= *ends.last().unwrap());
                }
                ends
            })
        })
        .collect();
    let mut ends = Vec::new();
    for w in writers {
        ends.extend(w.await.unwrap());
    }
    // 8 threads x (1+2+3+4+5) x 2 events.
    let all = stores[0].events_after(0, 100_000).await.unwrap();
    let cursors: Vec<u64> = all.iter().map(|e| e.cursor).collect();
    assert_eq!(
        cursors,
        (1..=240).collect::<Vec<_>>(),
        "dense, in commit order"
    );
    ends.sort_unstable();
    ends.dedup();
    assert_eq!(ends.len(), 80, "every commit ended on a cursor of its own");
    // Within each thread, commit order is seq order.
    for t in 1..=8 {
        let seqs: Vec<u64> = all
            .iter()
            .filter(|e| e.thread_id == thread_id(t))
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, (1..=30).collect::<Vec<_>>());
    }
    assert_eq!(stores[1].running_threads().await.unwrap().len(), 8);
}

/// A commit that fails (a duplicate seq) gives its cursors back: the next
/// commit, from another store, continues densely.
#[tokio::test]
async fn a_failed_commit_leaves_no_gap() {
    let Some((store, (db, dir))) = fixture().await else {
        return;
    };
    let id = thread_id(1);
    let one = |seq| Commit {
        events: vec![archived_event(&id, seq)],
        threads: vec![],
    };
    assert_eq!(store.commit(&one(1)).await.unwrap(), 1);
    assert!(store.commit(&one(1)).await.is_err());
    let other = PostgresStore::open(&db.url(), &dir.path().join("secret.key"))
        .await
        .unwrap();
    assert_eq!(other.commit(&one(2)).await.unwrap(), 2);
    let cursors: Vec<u64> = store
        .events_after(0, 10)
        .await
        .unwrap()
        .iter()
        .map(|e| e.cursor)
        .collect();
    assert_eq!(cursors, [1, 2]);
}

#[tokio::test]
async fn a_log_from_a_newer_format_is_refused_with_a_clear_error() {
    let Some((store, (db, dir))) = fixture().await else {
        return;
    };
    store.put_setting("log_format_version", "99").await.unwrap();
    store.close().await;
    let err = PostgresStore::open(&db.url(), &dir.path().join("secret.key"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("format version 99"), "{err}");
    assert!(err.contains(db.name()), "names the database: {err}");
}

#[tokio::test]
async fn keys_are_sealed_in_the_database() {
    let Some((store, (db, _dir))) = fixture().await else {
        return;
    };
    let mut provider = ProviderConfig::new("p", ProviderKind::OpenaiChat);
    provider.api_key = Some("sk-live-secret".into());
    store.put_provider(&provider).await.unwrap();
    assert_eq!(store.providers().await.unwrap(), [provider]);
    let pool = sqlx::PgPool::connect(&db.url()).await.unwrap();
    let (data,): (String,) = sqlx::query_as("SELECT data FROM providers")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    assert!(!data.contains("sk-live-secret"), "{data}");
}

/// One process at a time claims a database; the claim ends with its holder.
#[tokio::test]
async fn one_process_claims_a_database() {
    let Some((store, (db, dir))) = fixture().await else {
        return;
    };
    let claim = store.claim().await.unwrap();
    let other = PostgresStore::open(&db.url(), &dir.path().join("secret.key"))
        .await
        .unwrap();
    let err = other.claim().await.unwrap_err().to_string();
    assert!(err.contains("in use by another gantry process"), "{err}");
    claim.release().await.unwrap();
    other.claim().await.unwrap();
}

/// A database that does not exist yet is created, then migrated.
#[tokio::test]
async fn a_missing_database_is_created() {
    let Some(db) = TestDatabase::create_later().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = PostgresStore::open(&db.url(), &dir.path().join("secret.key"))
        .await
        .unwrap();
    assert_eq!(store.last_cursor().await.unwrap(), 0);
    assert_eq!(
        store
            .setting("log_format_version")
            .await
            .unwrap()
            .as_deref(),
        Some("1")
    );
    store.close().await;
}

/// PostgreSQL compacts with `VACUUM (ANALYZE)` and reports the database's
/// size from `pg_database_size`, before and after.
#[tokio::test]
async fn compacting_vacuums_and_reports_the_database_size() {
    use gantry_store::{CompactMode, CompactRequest};

    let Some((store, _guard)) = fixture().await else {
        return;
    };
    for n in 1..=5 {
        let id = thread_id(n);
        let commit = Commit {
            events: (1..=50).map(|seq| archived_event(&id, seq)).collect(),
            threads: vec![thread(&id, ThreadStatus::Idle, true)],
        };
        store.commit(&commit).await.unwrap();
        assert!(store.delete_thread(&id).await.unwrap());
    }
    let done = store.compact(CompactRequest::default()).await.unwrap();
    assert_eq!(done.mode, CompactMode::PostgresVacuum);
    assert!(done.size_before > 0 && done.size_after > 0, "{done:?}");
    assert_eq!(
        done.freed(),
        done.size_before as i64 - done.size_after as i64
    );
    store.close().await;
}

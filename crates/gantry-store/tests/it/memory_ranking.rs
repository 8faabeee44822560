//! The in-memory BM25 gives the same order as SQLite FTS5's bm25() for
//! every query over the fixture set, not just the best matches the
//! conformance cases check; PostgreSQL finds the same memories.

use crate::conformance;

use conformance::memories::{fixture_set, search};
use gantry_store::{MemoryStorage, MemoryStore, SqliteStore, Store};

const QUERIES: &[&str] = &[
    "how do I deploy the docker image?",
    "parser",
    "the",
    "the user",
    "database tests",
    "PostgreSQL database tests migrations",
    "cargo build rust release",
    "registry credentials expired",
    "commit",
    "test tests",
    "nine every morning standup team",
    "a an the of in to",
];

async fn order(store: &dyn Store, text: &str) -> (Vec<String>, u64) {
    let mut q = search(Some(text));
    q.limit = 100;
    let found = store.search_memories(&q).await.unwrap();
    let ids = found.memories.into_iter().map(|m| m.id.0).collect();
    (ids, found.total_count)
}

#[tokio::test]
async fn in_memory_bm25_orders_like_fts5() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(&dir.path().join("gantry.db"))
        .await
        .unwrap();
    let memory = MemoryStore::new();
    for m in fixture_set() {
        sqlite.put_memory(&m).await.unwrap();
        memory.put_memory(&m).await.unwrap();
    }
    for text in QUERIES {
        let fts = order(&sqlite, text).await;
        assert!(!fts.0.is_empty(), "{text}: the fixture should match");
        assert_eq!(order(&memory, text).await, fts, "{text}");
    }
}

/// PostgreSQL ranks with `ts_rank`, not BM25, so only what the port
/// promises is the same: which memories match and how many, for every
/// query; the order may differ where BM25 weighs rare words or length.
#[tokio::test]
async fn postgres_finds_what_fts5_finds() {
    let Some((postgres, _db)) = crate::postgres::fixture().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(&dir.path().join("gantry.db"))
        .await
        .unwrap();
    for m in fixture_set() {
        sqlite.put_memory(&m).await.unwrap();
        postgres.put_memory(&m).await.unwrap();
    }
    for text in QUERIES {
        let (fts, fts_total) = order(&sqlite, text).await;
        let (pg, pg_total) = order(&postgres, text).await;
        let shown = format!("{text}: fts5 {fts:?}, postgres {pg:?}");
        assert_eq!(pg_total, fts_total, "{shown}");
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        assert_eq!(sorted(pg), sorted(fts), "{shown}");
    }
}

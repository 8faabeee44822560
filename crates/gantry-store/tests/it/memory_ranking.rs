//! The two stores rank alike: the in-memory BM25 gives the same order as
//! SQLite FTS5's bm25() for every query over the fixture set, not just the
//! best matches the conformance cases check.

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

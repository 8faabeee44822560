//! Conformance cases for the memory part of the store: both stores keep,
//! count, filter and rank memories alike (SQLite with FTS5's bm25(), the
//! in-memory store with the same formula over the same tokens).

use std::collections::BTreeMap;

use gantry_store::{MemorySearch, Store};
use gantry_types::AgentId;
use gantry_types::memory::{MemoryId, MemoryItem, MemoryScope, MemoryStats, MemoryType};

use super::fixtures::thread_id;

use MemoryType::{Episodic, Procedural, Semantic, Working};

fn thread_scope() -> MemoryScope {
    MemoryScope::Thread(thread_id(1))
}

fn other_thread() -> MemoryScope {
    MemoryScope::Thread(thread_id(2))
}

fn agent_scope() -> MemoryScope {
    MemoryScope::Agent(AgentId::from("bot"))
}

/// A memory; `n` names it `mNN` and is also its timestamp in seconds.
fn memory(
    n: u32,
    scope: MemoryScope,
    memory_type: MemoryType,
    importance: f32,
    tags: &[&str],
    content: &str,
) -> MemoryItem {
    MemoryItem {
        id: MemoryId(format!("m{n:02}")),
        content: content.to_owned(),
        timestamp: i64::from(n) * 1000,
        importance,
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        memory_type,
        metadata: BTreeMap::new(),
        access_count: 0,
        last_accessed: None,
        scope,
    }
}

/// A dozen memories: ten in thread 1, one shared by agent `bot`, one in thread 2.
pub(crate) fn fixture_set() -> Vec<MemoryItem> {
    let t = thread_scope;
    vec![
        memory(
            1,
            t(),
            Semantic,
            0.9,
            &["rust", "build"],
            "The project builds with cargo build --release and needs Rust 1.85 or newer.",
        ),
        memory(
            2,
            t(),
            Procedural,
            0.8,
            &["deploy"],
            "To deploy, run make deploy from the repository root; it pushes the docker image to the registry.",
        ),
        memory(
            3,
            t(),
            Episodic,
            0.3,
            &["deploy", "incident"],
            "Yesterday's deploy failed because the registry credentials had expired.",
        ),
        memory(
            4,
            t(),
            Semantic,
            0.7,
            &["user"],
            "The user prefers tabs over spaces and short commit messages.",
        ),
        memory(
            5,
            t(),
            Working,
            0.2,
            &[],
            "Currently refactoring the parser module; tests in parser_tests.rs are red.",
        ),
        memory(
            6,
            t(),
            Semantic,
            0.6,
            &["database"],
            "The database is PostgreSQL 16; migrations live in the migrations folder.",
        ),
        memory(
            7,
            t(),
            Procedural,
            0.5,
            &["database", "test"],
            "Run the database tests with cargo test --features postgres against a local PostgreSQL.",
        ),
        memory(
            8,
            t(),
            Episodic,
            0.4,
            &[],
            "The user asked to rename the CLI binary to gantry.",
        ),
        memory(
            9,
            t(),
            Semantic,
            0.95,
            &["security"],
            "Never commit secrets: API keys live in the environment, not in config files.",
        ),
        memory(
            10,
            t(),
            Working,
            0.1,
            &["parser"],
            "Next step: add a test for nested parentheses in the parser.",
        ),
        memory(
            11,
            agent_scope(),
            Episodic,
            0.5,
            &[],
            "The team standup is at nine every morning.",
        ),
        memory(
            12,
            other_thread(),
            Semantic,
            0.8,
            &[],
            "The parser in the other project is written in Go.",
        ),
    ]
}

pub(crate) async fn seed(store: &dyn Store) {
    for m in fixture_set() {
        let stored = store.put_memory(&m).await.unwrap();
        assert_eq!(stored, Some(m));
    }
}

/// A search of thread 1 and agent `bot` (what a thread of the agent sees).
pub(crate) fn search(text: Option<&str>) -> MemorySearch {
    MemorySearch {
        scopes: vec![thread_scope(), agent_scope()],
        text: text.map(str::to_owned),
        limit: 10,
        ..MemorySearch::default()
    }
}

async fn ids(store: &dyn Store, search: &MemorySearch) -> (Vec<String>, u64) {
    let found = store.search_memories(search).await.unwrap();
    (
        found.memories.into_iter().map(|m| m.id.0).collect(),
        found.total_count,
    )
}

/// Stored fields come back exactly; retrieving counts an access, only in
/// the memory's own scope.
pub(crate) async fn memory_put_and_touch(store: &dyn Store) {
    let mut m = memory(
        1,
        thread_scope(),
        Procedural,
        0.7,
        &["b", "a"],
        "héllo wörld",
    );
    m.metadata.insert("source".into(), "chat".into());
    assert_eq!(store.put_memory(&m).await.unwrap(), Some(m.clone()));

    let first = store
        .touch_memory(&[thread_scope()], &m.id, 5_000)
        .await
        .unwrap()
        .expect("found in its scope");
    assert_eq!(first.access_count, 1);
    assert_eq!(first.last_accessed, Some(5_000));
    assert_eq!(
        MemoryItem {
            access_count: 0,
            last_accessed: None,
            ..first
        },
        m,
        "every other field as stored"
    );
    let second = store
        .touch_memory(&[agent_scope(), thread_scope()], &m.id, 6_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (second.access_count, second.last_accessed),
        (2, Some(6_000))
    );

    assert_eq!(
        store
            .touch_memory(&[other_thread(), agent_scope()], &m.id, 7_000)
            .await
            .unwrap(),
        None,
        "another scope does not see it"
    );
    assert_eq!(
        store
            .touch_memory(&[thread_scope()], &MemoryId::from("nope"), 7_000)
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.touch_memory(&[], &m.id, 7_000).await.unwrap(), None);
}

/// Storing an existing id replaces the memory (index and tags too) but
/// keeps its access count; an id of another scope is refused untouched.
pub(crate) async fn memory_replace(store: &dyn Store) {
    let old = memory(1, thread_scope(), Semantic, 0.5, &["old"], "walrus facts");
    store.put_memory(&old).await.unwrap();
    store
        .touch_memory(&[thread_scope()], &old.id, 9)
        .await
        .unwrap();

    let new = memory(1, thread_scope(), Episodic, 0.6, &["new"], "penguin facts");
    let stored = store.put_memory(&new).await.unwrap().expect("replaced");
    assert_eq!(stored.content, "penguin facts");
    assert_eq!((stored.access_count, stored.last_accessed), (1, Some(9)));

    let scope = || MemorySearch {
        scopes: vec![thread_scope()],
        limit: 10,
        ..MemorySearch::default()
    };
    let text = |t: &str| MemorySearch {
        text: Some(t.to_owned()),
        ..scope()
    };
    let tag = |t: &str| MemorySearch {
        tags: vec![t.to_owned()],
        ..scope()
    };
    assert_eq!(ids(store, &text("walrus")).await, (vec![], 0));
    assert_eq!(ids(store, &text("old")).await, (vec![], 0));
    assert_eq!(ids(store, &tag("old")).await, (vec![], 0));
    assert_eq!(ids(store, &text("penguin")).await, (vec!["m01".into()], 1));
    assert_eq!(ids(store, &tag("new")).await, (vec!["m01".into()], 1));
    let found = store.search_memories(&scope()).await.unwrap();
    assert_eq!(found.memories, vec![stored.clone()]);

    let stolen = memory(1, other_thread(), Semantic, 0.5, &[], "hijack");
    assert_eq!(store.put_memory(&stolen).await.unwrap(), None);
    let found = store.search_memories(&scope()).await.unwrap();
    assert_eq!(found.memories, vec![stored], "the original is untouched");
    assert_eq!(
        ids(
            store,
            &MemorySearch {
                scopes: vec![other_thread()],
                text: Some("hijack".into()),
                limit: 10,
                ..MemorySearch::default()
            }
        )
        .await,
        (vec![], 0)
    );
}

/// Full-text queries over the fixture set: the best match comes first, and
/// only the searched scopes are seen.
pub(crate) async fn memory_search_ranking(store: &dyn Store) {
    seed(store).await;
    let ranked = |text: &'static str| {
        let q = search(Some(text));
        async move { ids(store, &q).await }
    };

    // "deploy" three times (content and tag) beats twice; "docker image"
    // only in the first.
    assert_eq!(
        ranked("how do I deploy the docker image?").await.0[..2],
        ["m02", "m03"]
    );
    let (found, total) = ranked("how do I deploy").await;
    assert_eq!((found, total), (vec!["m02".into(), "m03".into()], 2));

    assert_eq!(ranked("secrets API keys").await, (vec!["m09".into()], 1));
    assert_eq!(ranked("parentheses").await, (vec!["m10".into()], 1));
    // "user" twice (content and tag) before once.
    assert_eq!(
        ranked("what does the user prefer?").await.0[..2],
        ["m04", "m08"]
    );
    assert_eq!(ranked("rust cargo build").await.0[0], "m01");
    let (found, _) = ranked("PostgreSQL database tests").await;
    assert_eq!(found[0], "m07", "the only memory with all three words");

    // The agent's shared memory is found from the thread; another thread's is not.
    assert_eq!(ranked("standup").await, (vec!["m11".into()], 1));
    let (found, _) = ranked("parser").await;
    assert!(found.contains(&"m10".to_owned()) && found.contains(&"m05".to_owned()));
    assert!(!found.contains(&"m12".to_owned()), "{found:?}");
    let other = MemorySearch {
        scopes: vec![other_thread()],
        ..search(Some("parser"))
    };
    assert_eq!(ids(store, &other).await, (vec!["m12".into()], 1));

    // Case and punctuation do not matter; a word no memory holds finds nothing.
    assert_eq!(ranked("PARENTHESES!!").await, (vec!["m10".into()], 1));
    assert_eq!(ranked("kubernetes").await, (vec![], 0));
}

/// Tags (every one), minimum importance, since, limit and total count.
pub(crate) async fn memory_search_filters(store: &dyn Store) {
    seed(store).await;
    let get = |s: MemorySearch| async move { ids(store, &s).await };
    let strs = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();

    // No text: most important first.
    let tagged = |tags: &[&str]| MemorySearch {
        tags: strs(tags),
        ..search(None)
    };
    assert_eq!(get(tagged(&["database"])).await, (strs(&["m06", "m07"]), 2));
    assert_eq!(
        get(tagged(&["database", "test"])).await,
        (strs(&["m07"]), 1)
    );
    assert_eq!(get(tagged(&["database", "rust"])).await, (vec![], 0));
    let deploy_registry = MemorySearch {
        tags: strs(&["deploy"]),
        ..search(Some("registry credentials"))
    };
    assert_eq!(get(deploy_registry).await, (strs(&["m03", "m02"]), 2));

    let important = MemorySearch {
        min_importance: Some(0.8),
        ..search(None)
    };
    assert_eq!(get(important).await, (strs(&["m09", "m01", "m02"]), 3));
    let important_text = MemorySearch {
        min_importance: Some(0.6),
        ..search(Some("database"))
    };
    assert_eq!(get(important_text).await, (strs(&["m06"]), 1));

    let recent = MemorySearch {
        since: Some(9_000),
        ..search(None)
    };
    assert_eq!(get(recent).await, (strs(&["m09", "m11", "m10"]), 3));

    let limited = MemorySearch {
        limit: 2,
        ..search(None)
    };
    assert_eq!(get(limited).await, (strs(&["m09", "m01"]), 11));
    let limited_text = MemorySearch {
        limit: 3,
        ..search(Some("the"))
    };
    let (found, total) = get(limited_text).await;
    assert_eq!((found.len(), total), (3, 11), "{found:?}");
}

/// Counts by class (long-term = semantic + procedural, short-term =
/// episodic, working); clearing removes exactly the selected types of the
/// selected scopes, from the index too.
pub(crate) async fn memory_stats_and_clear(store: &dyn Store) {
    seed(store).await;
    let stats = |long_term_count, short_term_count, working_count| MemoryStats {
        long_term_count,
        short_term_count,
        working_count,
    };
    assert_eq!(
        store.memory_stats(&[thread_scope()]).await.unwrap(),
        stats(6, 2, 2)
    );
    assert_eq!(
        store
            .memory_stats(&[thread_scope(), agent_scope()])
            .await
            .unwrap(),
        stats(6, 3, 2)
    );
    assert_eq!(
        store.memory_stats(&[other_thread()]).await.unwrap(),
        stats(1, 0, 0)
    );

    assert_eq!(
        store
            .clear_memories(&[thread_scope()], &[Working])
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store.memory_stats(&[thread_scope()]).await.unwrap(),
        stats(6, 2, 0)
    );
    assert_eq!(ids(store, &search(Some("parser"))).await, (vec![], 0));
    assert_eq!(
        store
            .clear_memories(&[thread_scope()], &[Working])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store.clear_memories(&[thread_scope()], &[]).await.unwrap(),
        0
    );

    assert_eq!(
        store
            .clear_memories(&[thread_scope()], &MemoryType::ALL)
            .await
            .unwrap(),
        8
    );
    assert_eq!(
        store.memory_stats(&[thread_scope()]).await.unwrap(),
        stats(0, 0, 0)
    );
    assert_eq!(
        ids(store, &search(Some("standup"))).await.1,
        1,
        "agent's kept"
    );
    assert_eq!(
        store.memory_stats(&[other_thread()]).await.unwrap(),
        stats(1, 0, 0)
    );

    // The index still works after the deletes.
    let again = memory(20, thread_scope(), Semantic, 0.5, &[], "deploy with care");
    store.put_memory(&again).await.unwrap();
    assert_eq!(
        ids(store, &search(Some("deploy"))).await,
        (vec!["m20".into()], 1)
    );
}

/// Query text is words, never query syntax: quotes, operators, stars and
/// column filters neither fail nor change what matches.
pub(crate) async fn memory_query_text_is_words(store: &dyn Store) {
    seed(store).await;
    for text in [
        "\"deploy",
        "NEAR(deploy",
        "deploy*",
        "content:deploy",
        "-deploy",
        "deploy AND NOT docker",
        "(deploy) OR {tags}",
    ] {
        let (found, _) = ids(store, &search(Some(text))).await;
        assert!(found.contains(&"m02".to_owned()), "{text}: {found:?}");
    }
    for blank in ["", "  ", "?!", "***"] {
        let (_, total) = ids(store, &search(Some(blank))).await;
        assert_eq!(total, 11, "no words is no text filter: {blank:?}");
    }
}

/// An empty store: nothing found, nothing counted, nothing cleared.
pub(crate) async fn memory_empty(store: &dyn Store) {
    assert_eq!(ids(store, &search(Some("anything"))).await, (vec![], 0));
    assert_eq!(ids(store, &search(None)).await, (vec![], 0));
    let no_scope = MemorySearch {
        scopes: vec![],
        ..search(None)
    };
    assert_eq!(ids(store, &no_scope).await, (vec![], 0));
    let scopes = [thread_scope(), agent_scope()];
    assert_eq!(
        store.memory_stats(&scopes).await.unwrap(),
        MemoryStats::default()
    );
    assert_eq!(
        store
            .clear_memories(&scopes, &MemoryType::ALL)
            .await
            .unwrap(),
        0
    );
}

/// Deleting one memory by id: only in the scopes asked, with its tags and
/// index entry (a search no longer finds it, the others still are).
pub(crate) async fn memory_delete_one(store: &dyn Store) {
    seed(store).await;
    let id = |n: &str| MemoryId(n.to_owned());
    assert!(
        !store
            .delete_memory(&[thread_scope()], &id("m12"))
            .await
            .unwrap(),
        "another thread's memory is not reachable from this one"
    );
    assert!(
        !store
            .delete_memory(&[thread_scope()], &id("m11"))
            .await
            .unwrap(),
        "the agent's memory needs the agent's scope"
    );
    assert!(
        store
            .delete_memory(&[thread_scope()], &id("m02"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete_memory(&[thread_scope()], &id("m02"))
            .await
            .unwrap(),
        "deleted once"
    );
    assert!(!store.delete_memory(&[], &id("m01")).await.unwrap());
    let (found, _) = ids(store, &search(Some("deploy docker registry"))).await;
    assert!(!found.contains(&"m02".to_owned()), "{found:?}");
    let mut tagged = search(None);
    tagged.tags = vec!["deploy".into()];
    let (found, _) = ids(store, &tagged).await;
    assert!(
        !found.contains(&"m02".to_owned()),
        "its tags went too: {found:?}"
    );
    assert_eq!(ids(store, &search(None)).await.1, 10);
    let (found, _) = ids(store, &search(Some("cargo"))).await;
    assert!(
        found.contains(&"m01".to_owned()),
        "the others stay indexed: {found:?}"
    );
    let scopes = [thread_scope(), agent_scope()];
    assert!(store.delete_memory(&scopes, &id("m11")).await.unwrap());
    assert_eq!(
        store.memory_stats(&[other_thread()]).await.unwrap(),
        MemoryStats {
            long_term_count: 1,
            short_term_count: 0,
            working_count: 0,
        },
        "the other thread's memory stays"
    );
}

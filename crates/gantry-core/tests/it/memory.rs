//! The agent's memory end to end, on a real SQLite file: ranked search with
//! filters, access counting, statistics and clearing by class, thread and
//! agent-shared scopes, the model's `remember` / `recall` tools in a turn,
//! and memory events on the engine-wide stream.

use crate::common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;
use gantry_core::{
    AgentSpec, CreateThread, Engine, EngineConfig, EngineError, EngineEventKind, EngineEventNotice,
    EngineEvents,
};
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::memory::{
    MemoryClear, MemoryEvent, MemoryId, MemoryItem, MemoryQuery, MemoryScope, MemoryStats,
    MemoryType, NewMemory,
};
use gantry_types::{AgentId, ItemKind, RuleDecision, ThreadId, ThreadPolicy, TurnStatus};
use serde_json::json;

const HOUR_MS: i64 = 60 * 60 * 1000;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn new(
    id: &str,
    memory_type: MemoryType,
    importance: f32,
    hours_ago: i64,
    tags: &[&str],
    content: &str,
) -> NewMemory {
    NewMemory {
        id: Some(MemoryId::from(id)),
        content: content.to_owned(),
        timestamp: Some(now_ms() - hours_ago * HOUR_MS),
        importance,
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        memory_type,
        ..NewMemory::default()
    }
}

/// A dozen memories of a project; some from days ago, some from the last hours.
fn fixture_set() -> Vec<NewMemory> {
    use MemoryType::{Episodic, Procedural, Semantic, Working};
    vec![
        new(
            "build",
            Semantic,
            0.9,
            72,
            &["Rust", "build"],
            "The project builds with cargo build --release and needs Rust 1.85 or newer.",
        ),
        new(
            "deploy",
            Procedural,
            0.8,
            48,
            &["deploy"],
            "To deploy, run make deploy from the repository root; it pushes the docker image to the registry.",
        ),
        new(
            "deploy-failed",
            Episodic,
            0.3,
            2,
            &["deploy", "incident"],
            "Today's deploy failed because the registry credentials had expired.",
        ),
        new(
            "tabs",
            Semantic,
            0.7,
            100,
            &["user"],
            "The user prefers tabs over spaces and short commit messages.",
        ),
        new(
            "refactor",
            Working,
            0.2,
            1,
            &[],
            "Currently refactoring the parser module; tests in parser_tests.rs are red.",
        ),
        new(
            "db",
            Semantic,
            0.6,
            200,
            &["database"],
            "The database is PostgreSQL 16; migrations live in the migrations folder.",
        ),
        new(
            "db-tests",
            Procedural,
            0.5,
            30,
            &["database", "test"],
            "Run the database tests with cargo test --features postgres against a local PostgreSQL.",
        ),
        new(
            "rename",
            Episodic,
            0.4,
            3,
            &[],
            "The user asked to rename the CLI binary to gantry.",
        ),
        new(
            "secrets",
            Semantic,
            0.95,
            500,
            &["security"],
            "Never commit secrets: API keys live in the environment, not in config files.",
        ),
        new(
            "next",
            Working,
            0.1,
            1,
            &["parser"],
            "Next step: add a test for nested parentheses in the parser.",
        ),
        new(
            "standup",
            Episodic,
            0.5,
            26,
            &[],
            "The team standup is at nine every morning.",
        ),
        new(
            "ci",
            Procedural,
            0.7,
            4,
            &["ci"],
            "CI runs cargo nextest on every push; a red build blocks the merge.",
        ),
    ]
}

async fn seed(engine: &Engine, thread: &ThreadId) {
    for m in fixture_set() {
        engine.memory().store(thread, m).await.expect("store");
    }
}

fn ids(found: &[MemoryItem]) -> Vec<&str> {
    found.iter().map(|m| m.id.as_str()).collect()
}

async fn search(engine: &Engine, thread: &ThreadId, query: MemoryQuery) -> (Vec<String>, u64) {
    let found = engine.memory().search(thread, query).await.expect("search");
    (
        ids(&found.memories)
            .into_iter()
            .map(str::to_owned)
            .collect(),
        found.total_count,
    )
}

fn text(q: &str) -> MemoryQuery {
    MemoryQuery {
        query: Some(q.to_owned()),
        ..MemoryQuery::default()
    }
}

/// The next memory event on the engine-wide stream.
async fn next_memory_event(events: &mut EngineEvents) -> (Option<ThreadId>, MemoryEvent) {
    let wait = async {
        loop {
            match events.recv().await {
                Some(EngineEventNotice::Event(e)) => {
                    if let EngineEventKind::Memory(m) = e.kind {
                        return (e.thread_id, m);
                    }
                }
                other => panic!("engine events ended: {other:?}"),
            }
        }
    };
    // A hang guard only: the event is published before the call returns.
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .expect("a memory event")
}

#[tokio::test]
async fn search_ranks_by_relevance_and_filters_on_a_fixture_set() {
    let h = Harness::new(vec![]).await;
    let (engine, t) = (&h.engine, &h.thread.id);
    seed(engine, t).await;

    // The best match first, for questions whose answer is known.
    let best = |q: &'static str| async move { search(engine, t, text(q)).await.0[0].clone() };
    assert_eq!(best("how do I deploy the docker image?").await, "deploy");
    assert_eq!(
        best("why did the deploy fail? credentials").await,
        "deploy-failed"
    );
    assert_eq!(best("where do API keys and secrets go").await, "secrets");
    assert_eq!(best("what does the user prefer?").await, "tabs");
    assert_eq!(best("PostgreSQL database tests").await, "db-tests");
    assert_eq!(best("when is the standup").await, "standup");
    assert_eq!(best("nested parentheses").await, "next");
    // Only memories holding a word of the query match, however many exist.
    let (found, total) = search(engine, t, text("deploy")).await;
    assert_eq!(
        (found, total),
        (vec!["deploy".into(), "deploy-failed".into()], 2)
    );
    assert_eq!(search(engine, t, text("kubernetes")).await, (vec![], 0));

    // Tags: every one given; case does not matter (tags are stored lowercase).
    let tagged = MemoryQuery {
        tags: vec!["Database".into(), "test".into()],
        ..MemoryQuery::default()
    };
    assert_eq!(
        search(engine, t, tagged).await,
        (vec!["db-tests".into()], 1)
    );
    let rust = engine
        .memory()
        .retrieve(t, &MemoryId::from("build"))
        .await
        .unwrap();
    assert_eq!(rust.tags, ["rust", "build"]);

    // Minimum importance; without a query the most important come first.
    let important = MemoryQuery {
        min_importance: Some(0.8),
        ..MemoryQuery::default()
    };
    let (found, total) = search(engine, t, important).await;
    assert_eq!(
        (found, total),
        (vec!["secrets".into(), "build".into(), "deploy".into()], 3)
    );

    // Recent only: stored in the last 24 hours.
    let recent = MemoryQuery {
        recent_only: true,
        ..MemoryQuery::default()
    };
    let (mut found, total) = search(engine, t, recent).await;
    found.sort();
    assert_eq!(total, 5);
    assert_eq!(found, ["ci", "deploy-failed", "next", "refactor", "rename"]);
    let recent_deploys = MemoryQuery {
        recent_only: true,
        ..text("deploy")
    };
    assert_eq!(
        search(engine, t, recent_deploys).await,
        (vec!["deploy-failed".into()], 1)
    );

    // Limit: the best few, and how many matched in all.
    let limited = MemoryQuery {
        limit: 2,
        ..text("cargo build --release")
    };
    let (found, total) = search(engine, t, limited).await;
    assert_eq!(found.len(), 2);
    assert_eq!(found[0], "build");
    assert_eq!(total, 3, "build, db-tests and ci say cargo or build");
    let (all, total) = search(engine, t, MemoryQuery::default()).await;
    assert_eq!((all.len(), total), (10, 12), "the default limit is 10");

    // Bad filters are refused with a reason.
    let bad = MemoryQuery {
        min_importance: Some(1.5),
        ..MemoryQuery::default()
    };
    let err = engine.memory().search(t, bad).await.unwrap_err();
    assert!(err.to_string().contains("between 0 and 1"), "{err}");
}

#[tokio::test]
async fn retrieving_counts_an_access_and_unknown_ids_are_not_found() {
    let h = Harness::new(vec![]).await;
    let (engine, t) = (&h.engine, &h.thread.id);
    let stored = engine
        .memory()
        .store(
            t,
            NewMemory {
                content: "the answer is 42".into(),
                ..NewMemory::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((stored.access_count, stored.last_accessed), (0, None));
    assert_eq!(stored.memory_type, MemoryType::Semantic);
    assert_eq!(stored.scope, MemoryScope::Thread(t.clone()));

    let first = engine.memory().retrieve(t, &stored.id).await.unwrap();
    let second = engine.memory().retrieve(t, &stored.id).await.unwrap();
    assert_eq!(first.access_count, 1);
    assert_eq!(second.access_count, 2);
    assert!(
        second
            .last_accessed
            .is_some_and(|at| at >= stored.timestamp)
    );
    assert_eq!(second.content, stored.content);

    // Searching does not count as an access.
    let found = engine.memory().search(t, text("answer")).await.unwrap();
    assert_eq!(found.memories[0].access_count, 2);

    match engine.memory().retrieve(t, &MemoryId::from("nope")).await {
        Err(EngineError::NotFound {
            what: "memory",
            name,
        }) => assert_eq!(name, "nope"),
        other => panic!("{other:?}"),
    }
    let unknown = ThreadId::new();
    assert!(matches!(
        engine.memory().retrieve(&unknown, &stored.id).await,
        Err(EngineError::ThreadNotFound(_))
    ));

    // Bad input is refused with what to change.
    let blank = NewMemory {
        content: "  ".into(),
        ..NewMemory::default()
    };
    let err = engine.memory().store(t, blank).await.unwrap_err();
    assert!(matches!(err, EngineError::InvalidInput(_)), "{err}");
    let heavy = NewMemory {
        content: "x".into(),
        importance: 2.0,
        ..NewMemory::default()
    };
    assert!(engine.memory().store(t, heavy).await.is_err());

    // Storing with the same id replaces the memory and keeps its count.
    let replaced = engine
        .memory()
        .store(
            t,
            NewMemory {
                id: Some(stored.id.clone()),
                content: "the answer is 43".into(),
                ..NewMemory::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(replaced.access_count, 2);
    assert_eq!(
        engine
            .memory()
            .search(t, text("43"))
            .await
            .unwrap()
            .total_count,
        1
    );
    assert_eq!(
        engine
            .memory()
            .search(t, text("42"))
            .await
            .unwrap()
            .total_count,
        0
    );
}

#[tokio::test]
async fn stats_count_by_class_and_clear_removes_only_the_chosen_classes() {
    let h = Harness::new(vec![]).await;
    let (engine, t) = (&h.engine, &h.thread.id);
    seed(engine, t).await;
    let stats = |long_term_count, short_term_count, working_count| MemoryStats {
        long_term_count,
        short_term_count,
        working_count,
    };
    // Long-term: semantic and procedural; short-term: episodic.
    assert_eq!(engine.memory().stats(t).await.unwrap(), stats(7, 3, 2));

    let working = MemoryClear {
        working: true,
        ..MemoryClear::default()
    };
    assert_eq!(engine.memory().clear(t, working).await.unwrap(), 2);
    assert_eq!(engine.memory().stats(t).await.unwrap(), stats(7, 3, 0));
    assert_eq!(search(engine, t, text("parser")).await, (vec![], 0));
    assert_eq!(
        engine
            .memory()
            .clear(t, MemoryClear::default())
            .await
            .unwrap(),
        0,
        "nothing selected clears nothing"
    );

    let short_term = MemoryClear {
        short_term: true,
        ..MemoryClear::default()
    };
    assert_eq!(engine.memory().clear(t, short_term).await.unwrap(), 3);
    assert_eq!(engine.memory().stats(t).await.unwrap(), stats(7, 0, 0));
    assert_eq!(
        engine.memory().clear(t, MemoryClear::all()).await.unwrap(),
        7
    );
    assert_eq!(engine.memory().stats(t).await.unwrap(), stats(0, 0, 0));

    // Memories survive a restart of the engine (they live in the SQLite file).
    engine
        .memory()
        .store(
            t,
            new(
                "kept",
                MemoryType::Semantic,
                0.5,
                0,
                &[],
                "kept across restarts",
            ),
        )
        .await
        .unwrap();
    let restarted = engine_at(h.dir.path(), &h.llm, EngineConfig::default()).await;
    let found = restarted
        .memory()
        .search(t, text("restarts"))
        .await
        .unwrap();
    assert_eq!(ids(&found.memories), ["kept"]);
}

#[tokio::test]
async fn threads_see_their_own_memories_and_their_agents_shared_ones() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let llm = MockLlm::start(Script::new(vec![])).unwrap();
    let engine = engine_at(dir.path(), &llm, EngineConfig::default()).await;
    let agent = engine
        .agents()
        .save(AgentSpec {
            id: Some(AgentId::from("bot")),
            ..AgentSpec::default()
        })
        .await
        .unwrap();
    let thread = |agent: Option<AgentId>| {
        let engine = engine.clone();
        let ws = ws.clone();
        async move {
            engine
                .threads()
                .create(CreateThread {
                    cwd: ws,
                    model: Some("test-model".into()),
                    agent,
                    ..CreateThread::default()
                })
                .await
                .unwrap()
                .id
        }
    };
    let a = thread(Some(agent.id.clone())).await;
    let b = thread(Some(agent.id.clone())).await;
    let loner = thread(None).await;

    let shared = engine
        .memory()
        .store(
            &a,
            NewMemory {
                content: "the release train leaves on Thursdays".into(),
                shared: true,
                ..NewMemory::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(shared.scope, MemoryScope::Agent(agent.id.clone()));
    let own = engine
        .memory()
        .store(
            &a,
            NewMemory {
                content: "thread a is fixing the release script".into(),
                ..NewMemory::default()
            },
        )
        .await
        .unwrap();

    // Thread b, of the same agent, sees the shared memory, not a's own.
    let (found, _) = search(&engine, &b, text("release")).await;
    assert_eq!(found, [shared.id.as_str()]);
    assert_eq!(
        engine
            .memory()
            .retrieve(&b, &shared.id)
            .await
            .unwrap()
            .access_count,
        1
    );
    assert!(matches!(
        engine.memory().retrieve(&b, &own.id).await,
        Err(EngineError::NotFound { .. })
    ));
    let (found, total) = search(&engine, &a, text("release")).await;
    assert_eq!(total, 2, "{found:?}");
    assert_eq!(engine.memory().stats(&b).await.unwrap().total(), 1);

    // A thread without an agent sees neither and cannot share.
    assert_eq!(search(&engine, &loner, text("release")).await, (vec![], 0));
    let err = engine
        .memory()
        .store(
            &loner,
            NewMemory {
                content: "x".into(),
                shared: true,
                ..NewMemory::default()
            },
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no agent"), "{err}");
    // Nor can it take over another scope's id.
    let err = engine
        .memory()
        .store(
            &loner,
            NewMemory {
                id: Some(own.id.clone()),
                content: "mine now".into(),
                ..NewMemory::default()
            },
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("already used"), "{err}");

    // Clearing from b leaves the shared memory unless asked to clear it too.
    assert_eq!(
        engine.memory().clear(&b, MemoryClear::all()).await.unwrap(),
        0
    );
    assert_eq!(engine.memory().stats(&a).await.unwrap().total(), 2);
    let everything = MemoryClear {
        include_shared: true,
        ..MemoryClear::all()
    };
    assert_eq!(engine.memory().clear(&b, everything).await.unwrap(), 1);
    let (found, _) = search(&engine, &a, text("release")).await;
    assert_eq!(found, [own.id.as_str()]);
}

#[tokio::test]
async fn the_model_remembers_then_recalls_and_the_recall_reaches_it() {
    let h = Harness::new(vec![
        Step::tool_call(
            "remember",
            json!({
                "content": "The staging database password rotates every Monday at 06:00 UTC.",
                "type": "procedural",
                "importance": 0.9,
                "tags": ["staging", "Secrets"]
            }),
        ),
        Step::tool_call("remember", json!({"content": "", "tags": ["empty"]})),
        Step::tool_call(
            "recall",
            json!({"query": "when does the staging password rotate?"}),
        ),
        Step::text("It rotates every Monday."),
    ])
    .await;
    // A deny-everything rule set: the memory tools still run.
    let mut policy = ThreadPolicy::default();
    policy.permissions.enabled = true;
    policy.permissions.default = RuleDecision::Deny;
    h.engine
        .safety()
        .set_policy(&h.thread.id, policy)
        .await
        .unwrap();
    h.engine
        .memory()
        .store(
            &h.thread.id,
            new(
                "noise",
                MemoryType::Semantic,
                0.5,
                1,
                &[],
                "The office plants need water.",
            ),
        )
        .await
        .unwrap();

    let mut events = h.engine.feeds().engine_events();
    let (_, seen) = h
        .run_turn("remember the rotation schedule, then tell me it")
        .await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);

    let offered = offered_tools(&h.llm, 0);
    assert!(
        offered.iter().any(|t| t == "remember") && offered.iter().any(|t| t == "recall"),
        "{offered:?}"
    );
    let remember = &h.llm.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "remember")
        .unwrap()["function"]["parameters"]["properties"]
        .clone();
    assert!(
        remember.get("shared").is_none(),
        "no agent, nothing to share with"
    );

    let told = last_tool_result(&h.llm, 1);
    assert!(told.starts_with("Remembered as "), "{told}");
    assert!(
        told.contains("procedural") && told.contains("staging, secrets"),
        "{told}"
    );
    let refused = last_tool_result(&h.llm, 2);
    assert!(refused.contains("content is empty"), "{refused}");
    let recalled = last_tool_result(&h.llm, 3);
    assert!(
        recalled.contains("rotates every Monday at 06:00 UTC"),
        "the recall result reaches the model: {recalled}"
    );
    assert!(!recalled.contains("plants"), "{recalled}");

    // The calls are tool-call items of the turn.
    let calls: Vec<_> = completed_kinds(&seen)
        .into_iter()
        .filter_map(|k| match k {
            ItemKind::ToolCall { name, error, .. } => Some((name, error.is_some())),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("remember".to_owned(), false),
            ("remember".to_owned(), true),
            ("recall".to_owned(), false)
        ]
    );

    // The bus saw what the model did, for this thread.
    let (thread_id, stored) = next_memory_event(&mut events).await;
    assert_eq!(thread_id.as_ref(), Some(&h.thread.id));
    let MemoryEvent::Stored { memory } = stored else {
        panic!("{stored:?}")
    };
    assert_eq!(memory.memory_type, MemoryType::Procedural);
    assert_eq!(memory.tags, ["staging", "secrets"]);
    let (_, searched) = next_memory_event(&mut events).await;
    let MemoryEvent::Searched {
        query,
        memory_ids,
        total_count,
    } = searched
    else {
        panic!("{searched:?}")
    };
    assert_eq!(query.limit, 5, "recall's default limit");
    assert_eq!(memory_ids.first(), Some(&memory.id));
    assert_eq!(total_count, 1);

    // What the model stored is the thread's memory.
    let kept = h
        .engine
        .memory()
        .retrieve(&h.thread.id, &memory.id)
        .await
        .unwrap();
    assert!(kept.content.contains("Monday"));
}

#[tokio::test]
async fn every_memory_operation_is_an_engine_event() {
    let h = Harness::new(vec![]).await;
    let (engine, t) = (&h.engine, &h.thread.id);
    let mut events = engine.feeds().engine_events();

    let stored = engine
        .memory()
        .store(
            t,
            new("n1", MemoryType::Episodic, 0.4, 0, &["x"], "we shipped v1"),
        )
        .await
        .unwrap();
    let recalled = engine.memory().retrieve(t, &stored.id).await.unwrap();
    engine.memory().search(t, text("shipped")).await.unwrap();
    engine.memory().stats(t).await.unwrap();
    let short_term = MemoryClear {
        short_term: true,
        ..MemoryClear::default()
    };
    engine.memory().clear(t, short_term).await.unwrap();

    let mut got = Vec::new();
    for _ in 0..4 {
        let (thread_id, event) = next_memory_event(&mut events).await;
        assert_eq!(thread_id.as_ref(), Some(t));
        got.push(event);
    }
    assert_eq!(
        got,
        [
            MemoryEvent::Stored { memory: stored },
            MemoryEvent::Recalled { memory: recalled },
            MemoryEvent::Searched {
                query: MemoryQuery {
                    limit: 10,
                    ..text("shipped")
                },
                memory_ids: vec![MemoryId::from("n1")],
                total_count: 1,
            },
            MemoryEvent::Cleared {
                clear: short_term,
                cleared_count: 1,
            },
        ]
    );
}

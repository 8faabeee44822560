//! Thread management: list, archive, fork, restart recovery.

use crate::common;

use std::sync::Arc;

use common::*;
use gantry_core::{EngineConfig, EngineError, IfBusy, ThreadQuery};
use gantry_store::{Commit, SqliteStore, Store};
use gantry_testkit::Step;
use gantry_types::{
    Event, EventPayload, Item, ItemKind, ItemStatus, ThreadStatus, Turn, TurnId, TurnStatus, Usage,
};

#[tokio::test]
async fn archive_hides_the_thread_and_refuses_input_until_unarchived() {
    let h = Harness::new(vec![Step::text("hi")]).await;
    let id = h.thread.id.clone();
    h.engine.threads().archive(&id).await.unwrap();
    let err = h
        .engine
        .turns()
        .send(&id, "hello", IfBusy::Reject)
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Archived(_)), "{err}");

    let active = h
        .engine
        .threads()
        .list(&ThreadQuery {
            archived: Some(false),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(active.threads.iter().all(|t| t.id != id));
    let archived = h
        .engine
        .threads()
        .list(&ThreadQuery {
            archived: Some(true),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(archived.threads.len(), 1);

    h.engine.threads().unarchive(&id).await.unwrap();
    let (_, seen) = h.run_turn("hello").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
}

#[tokio::test]
async fn fork_copies_history_up_to_a_turn() {
    let h = Harness::new(vec![
        Step::text("one"),
        Step::text("two"),
        Step::text("forked"),
    ])
    .await;
    let (first, _) = h.run_turn("first").await;
    h.run_turn("second").await;

    let fork = h
        .engine
        .threads()
        .fork(&h.thread.id, Some(&first))
        .await
        .unwrap();
    assert_ne!(fork.id, h.thread.id);
    assert_eq!(fork.forked_from.as_ref().map(|f| &f.turn_id), Some(&first));
    let view = h.engine.threads().read(&fork.id).await.unwrap();
    assert_eq!(view.turns.len(), 1);
    assert_eq!(view.turns[0].turn.input, "first");
    assert_ne!(view.turns[0].turn.id, first, "copies get their own ids");

    // The fork continues from the first turn only.
    let turn = h
        .engine
        .turns()
        .send(&fork.id, "third", IfBusy::Reject)
        .await
        .unwrap();
    let mut sub = h.engine.feeds().subscribe(&fork.id, 1).await.unwrap();
    until_turn_ends(&mut sub, &turn).await;
    let messages = h.llm.requests()[2].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let texts: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(texts, ["be brief", "first", "one", "third"]);

    let missing = h
        .engine
        .threads()
        .fork(&h.thread.id, Some(&TurnId::from("nope")))
        .await
        .unwrap_err();
    assert!(matches!(missing, EngineError::TurnNotFound { .. }));
}

#[tokio::test]
async fn list_pages_newest_first() {
    let h = Harness::new(vec![]).await;
    for _ in 0..4 {
        h.engine
            .threads()
            .create(gantry_core::CreateThread {
                cwd: h.workspace(),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    let first = h
        .engine
        .threads()
        .list(&ThreadQuery {
            limit: 3,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(first.threads.len(), 3);
    let second = h
        .engine
        .threads()
        .list(&ThreadQuery {
            limit: 3,
            cursor: first.next_cursor.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(second.threads.len(), 2);
    assert!(second.next_cursor.is_none());
    assert_eq!(
        second.threads.last().unwrap().id,
        h.thread.id,
        "oldest last"
    );
}

#[tokio::test]
async fn create_thread_rejects_a_missing_workspace() {
    let h = Harness::new(vec![]).await;
    let err = h
        .engine
        .threads()
        .create(gantry_core::CreateThread {
            cwd: "/no/such/dir".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("/no/such/dir"), "{err}");
}

#[tokio::test]
async fn restart_closes_a_turn_left_running_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("gantry.db"))
        .await
        .unwrap();
    // The log a crashed process leaves: a running turn with one completed
    // and one in-progress item.
    let thread_id = gantry_types::ThreadId::new();
    let turn_id = TurnId::new();
    let mut thread = gantry_types::Thread {
        id: thread_id.clone(),
        name: None,
        cwd: dir.path().display().to_string(),
        model: "m".into(),
        reasoning: None,
        instructions: None,
        endpoint: None,
        temperature: None,
        max_output_tokens: None,
        metadata: Default::default(),
        status: ThreadStatus::Idle,
        archived: false,
        preview: String::new(),
        created_at: 1,
        updated_at: 1,
        forked_from: None,
        agent_id: None,
        usage: Usage::default(),
        cost_usd: 0.0,
        paused: false,
        policy: Default::default(),
        lane_handlers: Vec::new(),
        todos: Vec::new(),
        goal: None,
        last_seq: 0,
    };
    let item = |kind, status| Item {
        id: Default::default(),
        turn_id: turn_id.clone(),
        round: 1,
        status,
        started_at: 2,
        completed_at: None,
        kind,
        tool_call: None,
    };
    let done = item(
        ItemKind::AgentMessage {
            text: "working on it".into(),
        },
        ItemStatus::Completed,
    );
    let open = item(
        ItemKind::CommandExecution {
            command: "make".into(),
            cwd: "/".into(),
            process_id: None,
            output: String::new(),
            exit_code: None,
            duration_ms: None,
        },
        ItemStatus::InProgress,
    );
    let payloads = vec![
        EventPayload::ThreadCreated {
            thread: thread.clone(),
        },
        EventPayload::TurnStarted {
            turn: Turn {
                id: turn_id.clone(),
                thread_id: thread_id.clone(),
                input: "build it".into(),
                key: None,
                status: TurnStatus::Running,
                started_at: 2,
                completed_at: None,
                rounds: 0,
                usage: Usage::default(),
                cost_usd: 0.0,
                error: None,
                failure: None,
                model: None,
                trace_parent: None,
            },
        },
        EventPayload::ItemCompleted { item: done },
        EventPayload::ItemStarted { item: open.clone() },
    ];
    let events: Vec<Event> = payloads
        .into_iter()
        .zip(1..)
        .map(|(payload, seq)| Event {
            thread_id: thread_id.clone(),
            seq,
            ts: 3,
            turn_id: None,
            item_id: None,
            payload,
            cursor: 0,
        })
        .collect();
    thread.status = ThreadStatus::Running;
    thread.last_seq = 4;
    store
        .commit(&Commit {
            events,
            threads: vec![thread],
        })
        .await
        .unwrap();
    drop(store);

    let llm = gantry_testkit::MockLlm::start(gantry_testkit::Script::new(vec![])).unwrap();
    let engine = engine_at(dir.path(), &llm, EngineConfig::default()).await;
    let view = engine.threads().read(&thread_id).await.unwrap();
    let turn = &view.turns[0];
    assert_eq!(turn.turn.status, TurnStatus::Interrupted);
    assert_eq!(view.thread.status, ThreadStatus::Idle);
    assert_eq!(
        turn.items[0].kind,
        ItemKind::AgentMessage {
            text: "working on it".into()
        }
    );
    assert_eq!(turn.items[1].status, ItemStatus::Interrupted);
    assert!(
        matches!(&turn.items[2].kind, ItemKind::Error { message } if message.contains("restart"))
    );

    // And it is durable: another restart finds nothing left to recover.
    engine.flush().await.expect("events stored");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&dir.path().join("gantry.db"))
            .await
            .unwrap(),
    );
    assert!(store.running_threads().await.unwrap().is_empty());
}

#[tokio::test]
async fn delete_removes_the_thread_with_its_history_and_memories_and_says_so() {
    let h = Harness::new(vec![Step::text("hi")]).await;
    let id = h.thread.id.clone();
    let (_, seen) = h.run_turn("hello").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let memory = gantry_types::memory::NewMemory {
        content: "the build needs cargo".into(),
        ..Default::default()
    };
    h.engine.memory().store(&id, memory).await.unwrap();
    let mut feed = h.engine.feeds().subscribe(&id, 1).await.unwrap();
    let mut engine_events = h.engine.feeds().engine_events();

    h.engine.threads().delete(&id).await.unwrap();

    let err = h.engine.threads().read(&id).await.unwrap_err();
    assert!(matches!(err, EngineError::ThreadNotFound(_)), "{err}");
    let listed = h.engine.threads().list(&ThreadQuery::default()).await;
    assert!(listed.unwrap().threads.iter().all(|t| t.id != id));
    // The thread's feed replays what it had, then ends.
    while let Some(n) = feed.next().await {
        assert!(matches!(n, gantry_core::Notification::Event(_)), "{n:?}");
    }
    let deleted = loop {
        match engine_events.recv().await {
            Some(gantry_core::EngineEventNotice::Event(e)) => {
                if let gantry_core::EngineEventKind::ThreadDeleted { thread_id } = e.kind {
                    break thread_id;
                }
            }
            other => panic!("no thread_deleted event: {other:?}"),
        }
    };
    assert_eq!(deleted, id);
    let err = h.engine.threads().delete(&id).await.unwrap_err();
    assert!(matches!(err, EngineError::ThreadNotFound(_)), "{err}");

    // Its id is free again, with nothing of the old thread: no events
    // beyond the new thread's own, no memories.
    let again = h
        .engine
        .threads()
        .create(gantry_core::CreateThread {
            id: Some(id.clone()),
            cwd: h.workspace(),
            model: Some("test-model".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let view = h.engine.threads().read(&again.id).await.unwrap();
    assert!(view.turns.is_empty());
    let stats = h.engine.memory().stats(&id).await.unwrap();
    assert_eq!(stats, gantry_types::memory::MemoryStats::default());
}

#[tokio::test]
async fn delete_is_refused_while_a_turn_runs_and_works_after_an_interrupt() {
    let h = Harness::new(vec![Step::text("slow").with_delay_ms(30_000)]).await;
    let id = h.thread.id.clone();
    let (mut sub, turn) = h.start_turn("hello").await;
    let err = h.engine.threads().delete(&id).await.unwrap_err();
    assert!(matches!(err, EngineError::Busy { .. }), "{err}");
    h.engine.turns().interrupt(&id).await.unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Interrupted);
    h.engine.threads().delete(&id).await.unwrap();
    let err = h.engine.threads().read(&id).await.unwrap_err();
    assert!(matches!(err, EngineError::ThreadNotFound(_)), "{err}");
}

/// A request that reaches a thread's actor as the thread is deleted hears
/// that the thread is gone, not that the engine is shutting down (a
/// client would give up on the server).
#[tokio::test]
async fn a_request_racing_a_delete_hears_the_thread_is_gone() {
    let h = Harness::new(vec![]).await;
    for _ in 0..40 {
        let thread = h
            .engine
            .threads()
            .create(gantry_core::CreateThread {
                cwd: h.workspace(),
                ..Default::default()
            })
            .await
            .expect("create");
        let (deleted, cleared) = tokio::join!(
            h.engine.threads().delete(&thread.id),
            h.engine.goals().clear(&thread.id)
        );
        deleted.expect("deleted");
        assert!(
            !matches!(cleared, Err(EngineError::ShuttingDown)),
            "{cleared:?}"
        );
    }
}

//! Thread cells: one thread's slow load never holds up another, and idle
//! threads leave memory and come back from the log.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::gated_store::GatedStore;
use common::*;
use gantry_core::{CreateThread, Engine, EngineBuilder, EngineConfig, IfBusy, SingleModel};
use gantry_store::SqliteStore;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::ThreadId;

fn evicting_fast() -> EngineConfig {
    EngineConfig {
        evict_idle_after: Some(Duration::from_millis(20)),
        ..EngineConfig::default()
    }
}

async fn thread_in(engine: &Engine, workspace: &Path) -> ThreadId {
    std::fs::create_dir_all(workspace).unwrap();
    engine
        .threads()
        .create(CreateThread {
            cwd: workspace.to_path_buf(),
            model: Some("test-model".into()),
            ..Default::default()
        })
        .await
        .expect("thread")
        .id
}

/// Waits until no thread is loaded (the actors evicted themselves).
async fn until_all_evicted(engine: &Engine) {
    while engine.threads().loaded() > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_whose_load_blocks_does_not_delay_another_thread() {
    let dir = tempfile::tempdir().unwrap();
    let llm = MockLlm::start(Script::new(vec![Step::text("hi from b")])).unwrap();
    // Two threads on disk, then an engine whose store holds the reads of
    // `slow`'s log until the gate opens.
    let (slow, fast) = {
        let engine = engine_at(dir.path(), &llm, EngineConfig::default()).await;
        let slow = thread_in(&engine, &dir.path().join("slow")).await;
        let fast = thread_in(&engine, &dir.path().join("fast")).await;
        engine.flush().await.unwrap();
        (slow, fast)
    };
    let (gate, open) = tokio::sync::watch::channel(false);
    let store = Arc::new(GatedStore {
        inner: Arc::new(
            SqliteStore::open(&dir.path().join("gantry.db"))
                .await
                .unwrap(),
        ),
        thread: slow.clone(),
        open,
        commits: None,
        log: None,
    });
    let mut llm_config = gantry_llm::ClientConfig::new(llm.base_url());
    llm_config.retry = fast_retries();
    let client = gantry_llm::openai_chat::OpenAiChatClient::new(llm_config).unwrap();
    let engine = EngineBuilder::new(store, Arc::new(SingleModel(Arc::new(client))))
        .start()
        .await
        .unwrap();

    let blocked = tokio::spawn({
        let (engine, slow) = (engine.clone(), slow.clone());
        async move { engine.threads().read(&slow).await }
    });
    tokio::task::yield_now().await;

    let view = engine
        .threads()
        .read(&fast)
        .await
        .expect("read another thread");
    assert_eq!(view.thread.id, fast);
    let mut sub = engine.feeds().subscribe(&fast, 1).await.unwrap();
    let turn = engine
        .turns()
        .send(&fast, "hello", IfBusy::Reject)
        .await
        .expect("send to another thread");
    until_turn_ends(&mut sub, &turn).await;
    assert!(!blocked.is_finished(), "the slow load is still held");

    gate.send_replace(true);
    let slow_view = blocked.await.unwrap().expect("the slow thread loads");
    assert_eq!(slow_view.thread.id, slow);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_thread_leaves_memory_and_comes_back_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let llm = MockLlm::start(Script::new(vec![Step::text("one"), Step::text("two")])).unwrap();
    let engine = engine_at(dir.path(), &llm, evicting_fast()).await;
    let id = thread_in(&engine, &dir.path().join("ws")).await;
    let mut sub = engine.feeds().subscribe(&id, 1).await.unwrap();
    let first = engine
        .turns()
        .send(&id, "first", IfBusy::Reject)
        .await
        .unwrap();
    until_turn_ends(&mut sub, &first).await;
    let before = engine.threads().read(&id).await.unwrap();

    until_all_evicted(&engine).await;
    let after = engine.threads().read(&id).await.expect("loads again");
    assert_eq!(after.thread.last_seq, before.thread.last_seq);
    assert_eq!(after.turns.len(), 1);

    // The subscription taken before the eviction goes on seamlessly.
    let second = engine
        .turns()
        .send(&id, "second", IfBusy::Reject)
        .await
        .unwrap();
    let seen = until_turn_ends(&mut sub, &second).await;
    let seqs: Vec<u64> = events(&seen).iter().map(|e| e.seq).collect();
    assert_eq!(seqs.first().copied(), Some(before.thread.last_seq + 1));
    assert_eq!(engine.threads().read(&id).await.unwrap().turns.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archived_thread_leaves_memory_at_once_and_a_read_does_not_keep_it() {
    let dir = tempfile::tempdir().unwrap();
    let llm = MockLlm::start(Script::new(vec![])).unwrap();
    // No idle eviction: only archiving may let the threads go.
    let config = EngineConfig {
        evict_idle_after: None,
        ..EngineConfig::default()
    };
    let engine = engine_at(dir.path(), &llm, config).await;
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(thread_in(&engine, &dir.path().join("ws")).await);
    }
    assert_eq!(engine.threads().loaded(), 20);
    for id in &ids {
        engine.threads().archive(id).await.unwrap();
    }
    // Each leaves right after its answer (idle eviction is off: without
    // leaving at once, this would wait for ever and the test time out).
    until_all_evicted(&engine).await;
    for id in &ids {
        let view = engine.threads().read(id).await.expect("still readable");
        assert!(view.thread.archived);
    }
    until_all_evicted(&engine).await;
    // Unarchived, a thread takes input again.
    engine.threads().unarchive(&ids[0]).await.unwrap();
    assert!(
        !engine
            .threads()
            .read(&ids[0])
            .await
            .unwrap()
            .thread
            .archived
    );
}

//! What clients see when the store cannot save: on a real, really full
//! disk (a small tmpfs), no event reaches a subscriber before it is stored,
//! no tool runs before its start is stored, the turn fails with the cause,
//! and everything kept in memory is saved and delivered once space returns.
//! And when the store is slow: a streaming turn waits for it (back-pressure
//! through every channel between the turn and the store), losing nothing.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::gated_store::GatedStore;
use common::*;
use futures_util::StreamExt;
use gantry_core::{
    CreateThread, Engine, EngineBuilder, EngineConfig, EngineEventKind, EngineEventNotice,
    EngineEvents, IfBusy, MAX_HELD_DELTAS, Notification, SingleModel, TURN_CHANNEL_CAPACITY,
};
use gantry_llm::{ModelClient, ModelEvent, ModelRequest, ModelStream};
use gantry_store::{SqliteStore, Store};
use gantry_testkit::Step;
use gantry_types::{
    DeltaKind, EventPayload, ItemKind, ItemStatus, ThreadId, TurnFailure, TurnId, TurnStatus,
};
use serde_json::json;
use tokio::sync::watch;

/// A tmpfs of a few MiB, unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// `None` where this process may not mount (not root): the test then
    /// says so and has nothing to check.
    fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().expect("tempdir");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Self { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills every free byte; returns the filler to delete to free it.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.path().join("filler");
        let mut file = std::fs::File::create(&path).expect("filler");
        let block = vec![0u8; 64 * 1024];
        while file.write_all(&block).is_ok() {}
        // A partial last block may still fit.
        while file.write_all(&block[..512]).is_ok() {}
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// The next store-health event.
async fn store_health(events: &mut EngineEvents) -> Option<String> {
    loop {
        match events.recv().await.expect("engine running") {
            EngineEventNotice::Event(e) => {
                if let EngineEventKind::StoreHealth { error } = e.kind {
                    return error;
                }
            }
            EngineEventNotice::Lagged { .. } => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_disk_full_clients_see_only_stored_events_and_nothing_is_lost_when_space_returns()
{
    let Some(disk) = SmallDisk::mount("8m") else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    let workspace = tempfile::tempdir().expect("workspace");
    let llm = gantry_testkit::MockLlm::start(gantry_testkit::Script::new(vec![
        Step::tool_call("shell", json!({"command": "touch ran"})),
        Step::text("done"),
    ]))
    .expect("mock llm");
    let engine = engine_at(disk.path(), &llm, EngineConfig::default()).await;
    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: workspace.path().to_path_buf(),
            model: Some("test-model".into()),
            ..Default::default()
        })
        .await
        .expect("thread");
    engine.flush().await.expect("stored");
    let mut sub = engine
        .feeds()
        .subscribe(&thread.id, 1)
        .await
        .expect("subscribe");
    let mut health = engine.feeds().engine_events();

    let filler = disk.fill();
    // Not acknowledged: an acknowledgement means stored.
    let refused = engine.turns().send(&thread.id, "go", IfBusy::Reject).await;
    assert!(
        matches!(refused, Err(gantry_core::EngineError::StoreUnavailable(_))),
        "{refused:?}"
    );
    let cause = store_health(&mut health).await.expect("a failure");
    assert!(
        cause.contains("full"),
        "the real cause is reported: {cause}"
    );

    // The turn ends, failed, without running the command.
    let view = loop {
        let view = engine.threads().read(&thread.id).await.expect("read");
        if view.turns.last().is_some_and(|t| t.turn.status.is_final()) {
            break view;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    let ended = &view.turns.last().expect("turn").turn;
    let turn = ended.id.clone();
    assert_eq!(ended.status, TurnStatus::Failed);
    assert_eq!(ended.failure, Some(TurnFailure::StoreUnavailable));
    assert!(!workspace.path().join("ran").exists(), "no tool ran");
    assert_eq!(
        engine
            .turns()
            .interrupt(&thread.id)
            .await
            .expect("interrupt"),
        None
    );

    // Everything a client was shown is in the store.
    let shown = drain_now(&mut sub);
    let stored = stored_seqs(disk.path(), &thread.id).await;
    for seq in &shown {
        assert!(
            stored.contains(seq),
            "seq {seq} was shown but is not stored"
        );
    }

    // Space returns: the kept events are saved and delivered, in order.
    std::fs::remove_file(filler).expect("free space");
    assert_eq!(store_health(&mut health).await, None);
    let rest = until_turn_ends(&mut sub, &turn).await;
    let mut seqs = shown;
    seqs.extend(events(&rest).iter().map(|e| e.seq));
    assert_eq!(seqs, (1..=view.thread.last_seq).collect::<Vec<_>>());
    assert_eq!(stored_seqs(disk.path(), &thread.id).await, seqs);
    engine.flush().await.expect("stored");
}

/// Seqs of the events a subscription holds right now, without waiting.
fn drain_now(sub: &mut gantry_core::Subscription) -> Vec<u64> {
    use futures_util::FutureExt;
    let mut seqs = Vec::new();
    while let Some(Some(n)) = sub.next().now_or_never() {
        if let Notification::Event(e) = n {
            seqs.push(e.seq);
        }
    }
    seqs
}

async fn stored_seqs(dir: &Path, thread: &ThreadId) -> Vec<u64> {
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&dir.join("gantry.db"))
            .await
            .expect("store"),
    );
    let events = store.events(thread, 1).await.expect("events");
    events.iter().map(|e| e.seq).collect()
}

#[tokio::test]
async fn deltas_never_arrive_before_their_item_and_every_event_shown_is_stored() {
    // Events and deltas keep their order although events wait for the
    // commit: a turn's deltas never arrive before the item they belong to.
    let h = Harness::new(vec![Step::text("streamed answer")]).await;
    let (_, seen) = h.run_turn("hi").await;
    let mut started = std::collections::HashSet::new();
    for n in &seen {
        match n {
            Notification::Event(e) => {
                if let EventPayload::ItemStarted { item } = &e.payload {
                    started.insert(item.id.clone());
                }
            }
            Notification::Delta(d) => {
                assert!(
                    started.contains(&d.item_id),
                    "a delta before its item started"
                );
            }
            Notification::Lagged { .. } => panic!("lagged"),
        }
    }
    let stored = stored_seqs(h.dir.path(), &h.thread.id).await;
    for e in events(&seen) {
        assert!(stored.contains(&e.seq));
    }
}

/// A thread in `dir` with one finished turn of `steps`.
async fn thread_with_turn(dir: &Path, llm: &gantry_testkit::MockLlm) -> ThreadId {
    let engine = engine_at(dir, llm, EngineConfig::default()).await;
    std::fs::create_dir_all(dir.join("ws")).expect("workspace");
    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: dir.join("ws"),
            model: Some("test-model".into()),
            ..Default::default()
        })
        .await
        .expect("thread");
    let mut sub = engine
        .feeds()
        .subscribe(&thread.id, 1)
        .await
        .expect("subscribe");
    let turn = engine
        .turns()
        .send(&thread.id, "go", IfBusy::Reject)
        .await
        .expect("send");
    until_turn_ends(&mut sub, &turn).await;
    engine.flush().await.expect("stored");
    thread.id
}

#[tokio::test]
async fn a_model_reply_nested_125_deep_is_read_back_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let deep = (1..125).fold(json!({}), |inner, _| json!({ "a": inner }));
    let llm = gantry_testkit::MockLlm::start(gantry_testkit::Script::new(vec![
        Step::tool_call("no_such_tool", deep.clone()),
        Step::text("ok"),
    ]))
    .expect("mock llm");
    let id = thread_with_turn(dir.path(), &llm).await;

    let engine = engine_at(dir.path(), &llm, EngineConfig::default()).await;
    let view = engine.threads().read(&id).await.expect("the thread loads");
    let arguments = view.turns[0].items.iter().find_map(|i| match &i.kind {
        gantry_types::ItemKind::ToolCall { arguments, .. } => Some(arguments.clone()),
        _ => None,
    });
    assert_eq!(arguments, Some(deep));
    let listed = engine
        .threads()
        .list(&Default::default())
        .await
        .expect("list");
    assert_eq!(listed.threads.len(), 1);
}

#[tokio::test]
async fn one_unreadable_thread_neither_stops_start_up_nor_hides_the_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    let llm = gantry_testkit::MockLlm::start(gantry_testkit::Script::new(vec![
        Step::text("one"),
        Step::text("two"),
    ]))
    .expect("mock llm");
    let broken = thread_with_turn(dir.path(), &llm).await;
    let good = thread_with_turn(dir.path(), &llm).await;
    // Both look left running by a dead process (start-up recovers them);
    // one has rows nothing can read.
    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        dir.path().join("gantry.db").display()
    ))
    .await
    .expect("db");
    for (sql, id) in [
        ("UPDATE threads SET status = 'running'", None),
        (
            "UPDATE events SET payload = '{\"type\":' WHERE thread_id = ?",
            Some(&broken),
        ),
        ("UPDATE threads SET data = '[' WHERE id = ?", Some(&broken)),
    ] {
        let query = sqlx::query(sql);
        let query = match id {
            Some(id) => query.bind(id.as_str()),
            None => query,
        };
        query.execute(&db).await.expect("break rows");
    }
    db.close().await;

    let engine = engine_at(dir.path(), &llm, EngineConfig::default()).await;
    let listed = engine
        .threads()
        .list(&Default::default())
        .await
        .expect("list");
    let ids: Vec<&ThreadId> = listed.threads.iter().map(|t| &t.id).collect();
    assert_eq!(ids, vec![&good]);
    assert!(engine.threads().read(&good).await.is_ok());
    let err = engine
        .threads()
        .read(&broken)
        .await
        .expect_err("unreadable");
    assert!(err.to_string().contains("corrupt"), "{err}");
}

/// The scripted model's client, counting the text deltas the turn has taken
/// from the answer's stream.
struct CountingClient {
    inner: Arc<dyn ModelClient>,
    taken: Arc<watch::Sender<usize>>,
}

impl ModelClient for CountingClient {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let taken = self.taken.clone();
        Box::pin(self.inner.stream(request).inspect(move |event| {
            if matches!(event, Ok(ModelEvent::TextDelta(_))) {
                taken.send_modify(|n| *n += 1);
            }
        }))
    }
}

/// Tokens of the long answer: six characters each, all different, so a
/// delta out of place shows.
const TOKENS: usize = 10_000;

fn token(i: usize) -> String {
    format!("{i:05} ")
}

/// A thread streaming a `TOKENS`-token answer while its store has stopped
/// writing: the engine, the thread, a subscription from its first event,
/// the turn, the store's gate, and the count of deltas the turn has taken.
struct SlowStore {
    engine: Engine,
    thread: ThreadId,
    sub: gantry_core::Subscription,
    turn: TurnId,
    /// The last seq stored before the store stopped writing.
    stored: u64,
    commits: watch::Sender<bool>,
    taken: watch::Receiver<usize>,
    _llm: gantry_testkit::MockLlm,
    _dir: tempfile::TempDir,
}

/// How far the turn gets ahead of a store that does not write: the deltas
/// the bus may hold, a full channel to the actor, and the one delta the
/// turn is waiting to send.
const AHEAD: usize = MAX_HELD_DELTAS + TURN_CHANNEL_CAPACITY + 1;

impl SlowStore {
    async fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("ws")).expect("workspace");
        let answer: String = (0..TOKENS).map(token).collect();
        let llm = gantry_testkit::MockLlm::start(gantry_testkit::Script::new(vec![
            Step::text(answer).with_chunk_size(6),
        ]))
        .expect("mock llm");
        let mut llm_config = gantry_llm::ClientConfig::new(llm.base_url());
        llm_config.retry = fast_retries();
        let (taken_tx, taken) = watch::channel(0);
        let client = CountingClient {
            inner: Arc::new(
                gantry_llm::openai_chat::OpenAiChatClient::new(llm_config).expect("client"),
            ),
            taken: Arc::new(taken_tx),
        };
        let (commits, commits_rx) = watch::channel(true);
        let store = GatedStore {
            inner: Arc::new(
                SqliteStore::open(&dir.path().join("gantry.db"))
                    .await
                    .expect("store"),
            ),
            thread: ThreadId::from("no-thread-s-reads-wait"),
            open: watch::channel(true).1,
            commits: Some(commits_rx),
            log: None,
        };
        // Room for every delta: a subscriber that lags is not under test.
        let config = EngineConfig {
            subscriber_buffer: 2 * TOKENS,
            ..EngineConfig::default()
        };
        let engine = EngineBuilder::new(Arc::new(store), Arc::new(SingleModel(Arc::new(client))))
            .config(config)
            .start()
            .await
            .expect("engine");
        let thread = engine
            .threads()
            .create(CreateThread {
                cwd: dir.path().join("ws"),
                model: Some("test-model".into()),
                ..Default::default()
            })
            .await
            .expect("thread")
            .id;
        engine.flush().await.expect("stored");
        let sub = engine
            .feeds()
            .subscribe(&thread, 1)
            .await
            .expect("subscribe");
        let stored = engine
            .threads()
            .read(&thread)
            .await
            .expect("read")
            .thread
            .last_seq;

        commits.send_replace(false);
        // The acknowledgement waits for the store; the turn does not.
        let acknowledged = {
            let (engine, thread) = (engine.clone(), thread.clone());
            tokio::spawn(async move { engine.turns().send(&thread, "go", IfBusy::Reject).await })
        };
        let mut started = taken.clone();
        started
            .wait_for(|n| *n > 0)
            .await
            .expect("the client counts");
        let view = engine.threads().read(&thread).await.expect("read");
        let turn = view.running_turn().expect("the turn runs").turn.id.clone();
        assert!(!acknowledged.is_finished(), "acknowledged before stored");
        Self {
            engine,
            thread,
            sub,
            turn,
            stored,
            commits,
            taken,
            _llm: llm,
            _dir: dir,
        }
    }

    /// Waits until the turn is as far ahead as it may get, then gives it
    /// every chance to go further while the actor answers commands.
    async fn until_held_back(&mut self) {
        self.taken
            .wait_for(|n| *n >= AHEAD)
            .await
            .expect("the client counts");
        for _ in 0..100 {
            let view = self
                .engine
                .threads()
                .read(&self.thread)
                .await
                .expect("read");
            assert!(view.running_turn().is_some());
            tokio::task::yield_now().await;
        }
        assert_eq!(
            *self.taken.borrow(),
            AHEAD,
            "the turn waits for the store, no further ahead"
        );
        // Nothing is shown that the store does not hold: no event of the
        // turn, and so none of its deltas.
        let shown = drain_now(&mut self.sub);
        assert_eq!(shown, (1..=self.stored).collect::<Vec<_>>());
    }
}

/// The agent message's deltas in `seen`, checked to come between its start
/// and its end; and its completed item.
fn streamed_answer(seen: &[Notification]) -> (Vec<String>, gantry_types::Item) {
    let mut started = None;
    let mut deltas = Vec::new();
    for n in seen {
        match n {
            Notification::Event(e) => match &e.payload {
                EventPayload::ItemStarted { item }
                    if matches!(item.kind, ItemKind::AgentMessage { .. }) =>
                {
                    started = Some(item.id.clone());
                }
                EventPayload::ItemCompleted { item } if Some(&item.id) == started.as_ref() => {
                    return (deltas, item.clone());
                }
                _ => {}
            },
            Notification::Delta(d) => {
                assert_eq!(Some(&d.item_id), started.as_ref(), "a delta of the answer");
                let DeltaKind::AgentText(text) = &d.kind else {
                    panic!("not answer text: {d:?}");
                };
                deltas.push(text.clone());
            }
            Notification::Lagged { .. } => panic!("lagged"),
        }
    }
    panic!("the answer never completed");
}

#[tokio::test]
async fn a_streaming_turn_waits_for_a_slow_store_and_every_delta_arrives_in_order() {
    let mut slow = SlowStore::start().await;
    slow.until_held_back().await;

    slow.commits.send_replace(true);
    let seen = until_turn_ends(&mut slow.sub, &slow.turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let seqs: Vec<u64> = events(&seen).iter().map(|e| e.seq).collect();
    let last = slow
        .engine
        .threads()
        .read(&slow.thread)
        .await
        .expect("read")
        .thread
        .last_seq;
    assert_eq!(seqs, (slow.stored + 1..=last).collect::<Vec<_>>());
    let (deltas, item) = streamed_answer(&seen);
    assert_eq!(deltas.len(), TOKENS, "every delta, none merged");
    for (i, delta) in deltas.iter().enumerate() {
        assert_eq!(delta, &token(i), "delta {i} in order");
    }
    let ItemKind::AgentMessage { text } = &item.kind else {
        panic!("{item:?}");
    };
    assert_eq!(text, &deltas.concat());
    assert_eq!(*slow.taken.borrow(), TOKENS);
}

#[tokio::test]
async fn a_turn_held_back_by_a_slow_store_is_still_interrupted_at_once() {
    let mut slow = SlowStore::start().await;
    slow.until_held_back().await;

    // The store still writes nothing: the actor never waits on its turn,
    // and drains an interrupted one.
    // The timeout only turns a deadlock into a failure; nothing waits on it.
    let interrupted = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        slow.engine.turns().interrupt(&slow.thread),
    )
    .await
    .expect("the interrupt does not wait for the store")
    .expect("interrupt");
    assert_eq!(interrupted, Some(slow.turn.clone()));
    let view = slow
        .engine
        .threads()
        .read(&slow.thread)
        .await
        .expect("read");
    assert_eq!(
        view.turns.last().unwrap().turn.status,
        TurnStatus::Interrupted
    );

    slow.commits.send_replace(true);
    let seen = until_turn_ends(&mut slow.sub, &slow.turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Interrupted);
    let (deltas, item) = streamed_answer(&seen);
    assert_eq!(item.status, ItemStatus::Interrupted);
    // Everything the turn took is delivered, in order, and kept.
    let taken = *slow.taken.borrow();
    assert!((AHEAD..TOKENS).contains(&taken), "{taken}");
    assert_eq!(deltas.len(), taken);
    for (i, delta) in deltas.iter().enumerate() {
        assert_eq!(delta, &token(i), "delta {i} in order");
    }
    let ItemKind::AgentMessage { text } = &item.kind else {
        panic!("{item:?}");
    };
    assert_eq!(text, &deltas.concat());
}

/// A thread created together with its first message (`gantry exec`'s first
/// request) asks the model while its creation is still unstored, and once
/// the store writes again its log is the creation, then the turn, whole.
#[tokio::test]
async fn a_thread_created_with_its_first_message_asks_the_model_before_it_is_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("ws")).expect("workspace");
    let llm = gantry_testkit::MockLlm::start(gantry_testkit::Script::new(vec![Step::text(
        "hello there",
    )]))
    .expect("mock llm");
    let mut llm_config = gantry_llm::ClientConfig::new(llm.base_url());
    llm_config.retry = fast_retries();
    let (taken_tx, mut taken) = watch::channel(0);
    let client = CountingClient {
        inner: Arc::new(
            gantry_llm::openai_chat::OpenAiChatClient::new(llm_config).expect("client"),
        ),
        taken: Arc::new(taken_tx),
    };
    let sqlite: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&dir.path().join("gantry.db"))
            .await
            .expect("store"),
    );
    // The store takes no commit until the test says so.
    let (commits, commits_rx) = watch::channel(false);
    let store = GatedStore {
        inner: sqlite.clone(),
        thread: ThreadId::from("no-thread-s-reads-wait"),
        open: watch::channel(true).1,
        commits: Some(commits_rx),
        log: None,
    };
    let engine = EngineBuilder::new(Arc::new(store), Arc::new(SingleModel(Arc::new(client))))
        .start()
        .await
        .expect("engine");

    // Bounded only so that a call waiting for the store fails with a cause.
    let (thread, turn) = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        engine.threads().create_and_send(
            CreateThread {
                cwd: dir.path().join("ws"),
                model: Some("test-model".into()),
                ..Default::default()
            },
            "go".into(),
        ),
    )
    .await
    .expect("created and sent without waiting for the store")
    .expect("created and sent");
    taken
        .wait_for(|n| *n >= 1)
        .await
        .expect("the model answers while nothing is stored");
    assert_eq!(llm.request_count(), 1);
    assert!(
        sqlite.thread(&thread.id).await.expect("read").is_none(),
        "the thread is not stored yet"
    );

    let mut feed = engine
        .feeds()
        .follow(&thread.id, thread.last_seq + 1)
        .await
        .expect("follow");
    commits.send_replace(true);
    let mut seen = Vec::new();
    while let Some(n) = feed.next().await.expect("feed") {
        if let Notification::Event(e) = n {
            let done = matches!(&e.payload, EventPayload::TurnCompleted { .. });
            seen.push(e);
            if done {
                break;
            }
        }
    }
    assert!(
        matches!(&seen[0].payload, EventPayload::TurnStarted { turn: t } if t.id == turn),
        "the feed starts at the turn: {:?}",
        seen[0].payload
    );
    assert!(matches!(
        &seen[seen.len() - 1].payload,
        EventPayload::TurnCompleted {
            status: TurnStatus::Completed,
            ..
        }
    ));

    engine.flush().await.expect("stored");
    let stored = sqlite.events(&thread.id, 1).await.expect("events");
    assert!(matches!(
        stored[0].payload,
        EventPayload::ThreadCreated { .. }
    ));
    assert_eq!(
        stored.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=stored.len() as u64).collect::<Vec<_>>(),
        "no gap in the stored log"
    );
    let texts: Vec<&str> = stored
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ItemCompleted { item } => match &item.kind {
                ItemKind::UserMessage { text, .. } | ItemKind::AgentMessage { text } => {
                    Some(text.as_str())
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["go", "hello there"]);
}

/// A first message that is empty is refused before any thread is created.
#[tokio::test]
async fn an_empty_first_message_creates_no_thread() {
    let llm = gantry_testkit::MockLlm::start(gantry_testkit::Script::new(vec![])).expect("llm");
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = engine_at(dir.path(), &llm, EngineConfig::default()).await;
    let err = engine
        .threads()
        .create_and_send(
            CreateThread {
                cwd: dir.path().to_owned(),
                ..Default::default()
            },
            "  ".into(),
        )
        .await
        .expect_err("an empty message is refused");
    assert!(
        matches!(err, gantry_core::EngineError::InvalidInput(_)),
        "{err}"
    );
    let listed = engine
        .threads()
        .list(&gantry_core::ThreadQuery::default())
        .await
        .expect("list");
    assert!(listed.threads.is_empty(), "{:?}", listed.threads);
    assert_eq!(llm.request_count(), 0);
}

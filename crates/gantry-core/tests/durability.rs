//! What clients see when the store cannot save: on a real, really full
//! disk (a small tmpfs), no event reaches a subscriber before it is stored,
//! no tool runs before its start is stored, the turn fails with the cause,
//! and everything kept in memory is saved and delivered once space returns.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::*;
use gantry_core::{
    CreateThread, EngineConfig, EngineEventKind, EngineEventNotice, EngineEvents, IfBusy,
    Notification,
};
use gantry_store::{SqliteStore, Store};
use gantry_testkit::Step;
use gantry_types::{EventPayload, ThreadId, TurnFailure, TurnStatus};
use serde_json::json;

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
    let turn = engine
        .turns()
        .send(&thread.id, "go", IfBusy::Reject)
        .await
        .expect("send");
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

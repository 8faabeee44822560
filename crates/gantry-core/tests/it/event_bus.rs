//! Subscriptions "from seq N": replay, then live, with no gap and no duplicate.

use crate::common;

use common::*;
use std::sync::Arc;

use gantry_core::{IfBusy, Notification};
use gantry_store::{Commit, SqliteStore, Store};
use gantry_testkit::Step;
use gantry_types::EventPayload;
use gantry_types::{Event, ThreadId};
use serde_json::json;

fn seqs(seen: &[Notification]) -> Vec<u64> {
    events(seen).iter().map(|e| e.seq).collect()
}

#[tokio::test]
async fn subscribers_joining_at_any_point_see_every_seq_exactly_once() {
    let steps: Vec<Step> = (0..20)
        .map(|i| {
            Step::tool_call(
                "write_file",
                json!({"path": format!("f{i}.txt"), "content": "x"}),
            )
        })
        .chain([Step::text("done")])
        .collect();
    let h = Harness::new(steps).await;
    let id = h.thread.id.clone();
    let turn = h
        .engine
        .turns()
        .send(&id, "write twenty files", IfBusy::Reject)
        .await
        .unwrap();

    // Join while events are being produced, from several starting points.
    let mut subs = Vec::new();
    for from in [1u64, 3, 8] {
        subs.push((from, h.engine.feeds().subscribe(&id, from).await.unwrap()));
        tokio::task::yield_now().await;
    }
    for (from, mut sub) in subs {
        let seen = until_turn_ends(&mut sub, &turn).await;
        let got = seqs(&seen);
        let expected: Vec<u64> = (from..=*got.last().unwrap()).collect();
        assert_eq!(got, expected, "subscriber from {from}");
    }

    // After the fact, a replay from the store gives the same log.
    let mut late = h.engine.feeds().subscribe(&id, 1).await.unwrap();
    let seen = until_turn_ends(&mut late, &turn).await;
    let got = seqs(&seen);
    assert_eq!(got, (1..=*got.last().unwrap()).collect::<Vec<_>>());
}

#[tokio::test]
async fn all_threads_subscription_replays_and_follows_every_thread() {
    let h = Harness::new(vec![Step::text("one"), Step::text("two")]).await;
    let (first, _) = h.run_turn("first").await;
    let other = h
        .engine
        .threads()
        .create(gantry_core::CreateThread {
            cwd: h.workspace(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut all = h.engine.feeds().subscribe_all(1).await.unwrap();
    let second = h
        .engine
        .turns()
        .send(&h.thread.id, "second", IfBusy::Reject)
        .await
        .unwrap();
    let seen = until_turn_ends(&mut all, &second).await;
    let evs = events(&seen);
    assert!(
        evs.iter().any(|e| e.thread_id == other.id),
        "the other thread's creation is replayed"
    );
    assert!(evs.iter().any(
        |e| matches!(&e.payload, EventPayload::TurnCompleted { turn_id, .. } if *turn_id == first)
    ));
    for thread in [&h.thread.id, &other.id] {
        let s: Vec<u64> = evs
            .iter()
            .filter(|e| &e.thread_id == thread)
            .map(|e| e.seq)
            .collect();
        assert_eq!(
            s,
            (1..=s.len() as u64).collect::<Vec<_>>(),
            "thread {thread} gapless"
        );
    }
}

#[tokio::test]
async fn a_subscriber_that_falls_behind_is_told_where_to_resume() {
    let config = gantry_core::EngineConfig {
        subscriber_buffer: 16,
        ..Default::default()
    };
    let steps: Vec<Step> = (0..10)
        .map(|i| {
            Step::tool_call(
                "write_file",
                json!({"path": format!("f{i}"), "content": "x"}),
            )
        })
        .chain([Step::text("done")])
        .collect();
    let h = Harness::with_config(steps, config).await;
    let id = h.thread.id.clone();
    let mut slow = h.engine.feeds().subscribe(&id, 1).await.unwrap();
    let mut fast = h.engine.feeds().subscribe(&id, 1).await.unwrap();
    let turn = h
        .engine
        .turns()
        .send(&id, "go", IfBusy::Reject)
        .await
        .unwrap();
    // Drain the fast subscriber to the end while the slow one reads nothing.
    until_turn_ends(&mut fast, &turn).await;

    let mut delivered = Vec::new();
    let resume = loop {
        match slow.next().await.expect("lagged before the end") {
            Notification::Event(e) => delivered.push(e.seq),
            Notification::Lagged { resume_from } => break resume_from,
            Notification::Delta(_) => {}
        }
    };
    let from = resume;
    assert_eq!(from, delivered.last().map_or(1, |s| s + 1));
    let mut again = h.engine.feeds().subscribe(&id, from).await.unwrap();
    let rest = until_turn_ends(&mut again, &turn).await;
    delivered.extend(seqs(&rest));
    assert_eq!(
        delivered,
        (1..=*delivered.last().unwrap()).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn joining_mid_item_gets_the_text_so_far_first() {
    let h = Harness::new(vec![
        Step::text("0123456789abcdefghij")
            .with_chunk_size(2)
            .with_delay_ms(30),
    ])
    .await;
    let id = h.thread.id.clone();
    let mut early = h.engine.feeds().subscribe(&id, 1).await.unwrap();
    let turn = h
        .engine
        .turns()
        .send(&id, "count", IfBusy::Reject)
        .await
        .unwrap();
    // Wait until a few deltas went out, then join.
    let mut streamed = String::new();
    while streamed.len() < 6 {
        if let Notification::Delta(d) = early.next().await.unwrap() {
            streamed.push_str(d.kind.text());
        }
    }
    let mut late = h.engine.feeds().subscribe(&id, 1).await.unwrap();
    let seen = until_turn_ends(&mut late, &turn).await;
    let text: String = seen
        .iter()
        .filter_map(|n| match n {
            Notification::Delta(d) => Some(d.kind.text().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(
        text, "0123456789abcdefghij",
        "catch-up delta plus live deltas give the whole text once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_all_threads_subscriber_far_behind_catches_up_page_by_page_seeing_each_event_once() {
    // 20 000 events of 40 threads stored by an earlier run, interleaved.
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        SqliteStore::open(&dir.path().join("gantry.db"))
            .await
            .unwrap(),
    );
    let threads: Vec<ThreadId> = (0..40)
        .map(|i| ThreadId::from(format!("t{i:02}").as_str()))
        .collect();
    for batch in 0..100u64 {
        let events = (0..200u64)
            .map(|i| {
                let n = batch * 200 + i;
                let thread = &threads[(n % 40) as usize];
                Event {
                    thread_id: thread.clone(),
                    seq: n / 40 + 1,
                    ts: 0,
                    turn_id: None,
                    item_id: None,
                    payload: EventPayload::ThreadArchived,
                    cursor: 0,
                }
            })
            .collect();
        store
            .commit(&Commit {
                events,
                threads: vec![],
            })
            .await
            .unwrap();
    }
    let llm = gantry_testkit::MockLlm::start(gantry_testkit::Script::new(vec![])).unwrap();
    let engine = engine_with(
        dir.path(),
        Arc::new(gantry_core::SingleModel(Arc::new(
            gantry_llm::openai_chat::OpenAiChatClient::new(gantry_llm::ClientConfig::new(
                llm.base_url(),
            ))
            .unwrap(),
        ))),
        gantry_core::EngineConfig::default(),
    )
    .await;
    let mut all = engine.feeds().follow_all(1).await.unwrap();
    let mut next = 1u64;
    let mut per_thread: std::collections::HashMap<ThreadId, u64> = Default::default();
    while next <= 20_000 {
        let Some(Notification::Event(e)) = all.next().await.unwrap() else {
            panic!("only events are stored");
        };
        assert_eq!(e.cursor, next, "every event once, in commit order");
        let seq = per_thread.entry(e.thread_id.clone()).or_insert(0);
        assert_eq!(e.seq, *seq + 1, "each thread's events in seq order");
        *seq = e.seq;
        next += 1;
    }
    assert_eq!(all.resume_from(), 20_001);
}

/// `VmHWM` (peak RSS) of this process, in MiB (nextest runs each test in
/// its own process).
fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_all_threads_subscriber_a_million_events_behind_catches_up_in_bounded_memory() {
    const EVENTS: u64 = 1_000_000;
    let log = Arc::new(common::gated_store::SyntheticLog {
        events: EVENTS,
        threads: 100,
        ..Default::default()
    });
    let store = Arc::new(common::gated_store::GatedStore {
        inner: Arc::new(gantry_store::MemoryStore::new()),
        thread: ThreadId::from("none"),
        open: tokio::sync::watch::channel(true).1,
        commits: None,
        log: Some(log.clone()),
    });
    // Never asked: the feed only reads the store.
    let client = gantry_llm::openai_chat::OpenAiChatClient::new(gantry_llm::ClientConfig::new(
        "http://127.0.0.1:9",
    ))
    .unwrap();
    let engine = gantry_core::EngineBuilder::new(
        store,
        Arc::new(gantry_core::SingleModel(Arc::new(client))),
    )
    .start()
    .await
    .unwrap();
    let before = peak_rss_mib();
    let mut all = engine.feeds().follow_all(1).await.unwrap();
    let mut per_thread: std::collections::HashMap<ThreadId, u64> = Default::default();
    for next in 1..=EVENTS {
        let Some(Notification::Event(e)) = all.next().await.unwrap() else {
            panic!("only events are stored");
        };
        assert_eq!(e.cursor, next, "every event once, in commit order");
        let seq = per_thread.entry(e.thread_id.clone()).or_insert(0);
        assert_eq!(e.seq, *seq + 1, "each thread's events in seq order");
        *seq = e.seq;
    }
    assert_eq!(all.resume_from(), EVENTS + 1);
    // Bounded memory: the store is read a page at a time, and the process
    // grew by far less than the log (about 200 MiB as events in memory).
    let page = log.largest_read.load(std::sync::atomic::Ordering::Relaxed);
    assert!(page <= 1024, "read {page} events at once");
    let grew = peak_rss_mib().saturating_sub(before);
    assert!(grew < 64, "peak RSS grew by {grew} MiB while catching up");
}

#[tokio::test]
async fn an_all_threads_feed_that_falls_behind_picks_up_by_cursor_without_gap_or_duplicate() {
    let config = gantry_core::EngineConfig {
        subscriber_buffer: 16,
        ..Default::default()
    };
    let steps: Vec<Step> = (0..10)
        .map(|i| {
            Step::tool_call(
                "write_file",
                json!({"path": format!("f{i}"), "content": "x"}),
            )
        })
        .chain([Step::text("done")])
        .collect();
    let h = Harness::with_config(steps, config).await;
    let mut all = h.engine.feeds().follow_all_now();
    let mut fast = h.engine.feeds().subscribe(&h.thread.id, 1).await.unwrap();
    let turn = h
        .engine
        .turns()
        .send(&h.thread.id, "go", IfBusy::Reject)
        .await
        .unwrap();
    // The all-threads feed reads nothing until the turn is over: it lags.
    until_turn_ends(&mut fast, &turn).await;
    let mut cursors = Vec::new();
    loop {
        match all.next().await.unwrap().expect("engine running") {
            Notification::Event(e) => {
                cursors.push(e.cursor);
                if matches!(&e.payload, EventPayload::TurnCompleted { .. }) {
                    break;
                }
            }
            Notification::Delta(_) => {}
            Notification::Lagged { .. } => panic!("a feed never shows a lag"),
        }
    }
    let first = cursors[0];
    assert_eq!(
        cursors,
        (first..first + cursors.len() as u64).collect::<Vec<_>>()
    );
}

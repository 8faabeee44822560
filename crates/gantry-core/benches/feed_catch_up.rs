//! An all-threads subscriber 1 000 000 events behind: events of 100
//! threads stored by an earlier run, then an engine started on that store
//! and a feed from cursor 1. Prints the catch-up time and the peak RSS
//! (the replay reads the store page by page, so memory stays flat).
//!
//! Run: `cargo bench -p gantry-core --bench feed_catch_up`.

use std::sync::Arc;
use std::time::Instant;

use gantry_core::{EngineBuilder, Notification, SingleModel};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_store::{Commit, SqliteStore, Store};
use gantry_types::{Event, EventPayload, ThreadId};

const EVENTS: u64 = 1_000_000;
const THREADS: u64 = 100;
const BATCH: u64 = 5_000;

/// `VmHWM` (peak RSS) of this process, in MiB.
fn peak_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("gantry.db");
        {
            let store = SqliteStore::open(&path).await.expect("store");
            let threads: Vec<ThreadId> = (0..THREADS)
                .map(|i| ThreadId::from(format!("thread-{i:03}").as_str()))
                .collect();
            for batch in 0..EVENTS / BATCH {
                let events = (0..BATCH)
                    .map(|i| {
                        let n = batch * BATCH + i;
                        Event {
                            thread_id: threads[(n % THREADS) as usize].clone(),
                            seq: n / THREADS + 1,
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
                    .expect("commit");
            }
            store.close().await;
        }
        let before = peak_mib();
        let store = Arc::new(SqliteStore::open(&path).await.expect("store"));
        // Never asked: the feed only reads the store.
        let client =
            OpenAiChatClient::new(ClientConfig::new("http://127.0.0.1:9")).expect("client");
        let engine = EngineBuilder::new(store, Arc::new(SingleModel(Arc::new(client))))
            .start()
            .await
            .expect("engine");
        let started = Instant::now();
        let mut feed = engine.feeds().follow_all(1).await.expect("feed");
        let mut seen = 0u64;
        while seen < EVENTS {
            match feed.next().await.expect("feed") {
                Some(Notification::Event(e)) => {
                    seen += 1;
                    assert_eq!(e.cursor, seen, "every event once, in order");
                }
                Some(_) => {}
                None => panic!("engine stopped"),
            }
        }
        let took = started.elapsed().as_secs_f64();
        println!(
            "all-threads feed {EVENTS} events behind: caught up in {took:.1} s ({:.0} events/s); \
             peak RSS {:.1} MiB (after writing the log: {before:.1} MiB)",
            EVENTS as f64 / took,
            peak_mib()
        );
    });
}

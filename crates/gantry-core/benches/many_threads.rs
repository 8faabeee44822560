//! Memory with many threads: touch 10 000 threads (`GANTRY_BENCH_THREADS`) (create each and run one
//! turn against an in-process model that answers at once), then let idle
//! ones be evicted. Prints peak RSS, RSS with every thread loaded, and RSS
//! once the idle actors left memory.
//!
//! Run: `cargo bench -p gantry-core --bench many_threads`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::stream;
use gantry_core::{CreateThread, Engine, EngineBuilder, EngineConfig, IfBusy, SingleModel};
use gantry_llm::{ModelClient, ModelEvent, ModelRequest, ModelStream};
use gantry_store::SqliteStore;

/// Threads touched; `GANTRY_BENCH_THREADS` overrides (to see RSS level off).
fn threads() -> usize {
    std::env::var("GANTRY_BENCH_THREADS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}

/// Answers every request with one short text at once.
struct Instant1;

impl ModelClient for Instant1 {
    fn stream(&self, _request: ModelRequest) -> ModelStream {
        Box::pin(stream::iter(
            [
                ModelEvent::TextDelta("ok".into()),
                ModelEvent::Finished {
                    finish_reason: None,
                },
            ]
            .into_iter()
            .map(Ok),
        ))
    }
}

/// `VmRSS` and `VmHWM` of this process, in MiB.
fn rss_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

async fn touch_all(engine: &Engine, dir: &std::path::Path) {
    for _ in 0..threads() {
        let thread = engine
            .threads()
            .create(CreateThread {
                cwd: dir.to_path_buf(),
                ..Default::default()
            })
            .await
            .expect("thread");
        let turn = engine
            .turns()
            .send(&thread.id, "hi", IfBusy::Reject)
            .await
            .expect("send");
        engine.turns().wait(&thread.id, &turn).await.expect("turn");
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("gantry.db"))
            .await
            .expect("store");
        let idle = Duration::from_secs(2);
        let engine = EngineBuilder::new(Arc::new(store), Arc::new(SingleModel(Arc::new(Instant1))))
            .config(EngineConfig {
                evict_idle_after: Some(idle),
                ..EngineConfig::default()
            })
            .start()
            .await
            .expect("engine");
        let (start_rss, _) = rss_mib();
        let started = Instant::now();
        touch_all(&engine, dir.path()).await;
        let took = started.elapsed();
        let loaded = engine.threads().loaded();
        let (touched_rss, _) = rss_mib();
        while engine.threads().loaded() > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (evicted_rss, peak) = rss_mib();
        println!(
            "{} threads touched (create + one turn each) in {:.1} s; RSS at start {start_rss:.1} MiB, \
             after touching {touched_rss:.1} MiB ({loaded} loaded), after eviction {evicted_rss:.1} MiB; peak {peak:.1} MiB",
            threads(),
            took.as_secs_f64()
        );
    });
}

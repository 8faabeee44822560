//! The engine's store on SQLite and on PostgreSQL, side by side: event
//! append throughput through the `Store` port, and a whole `gantry exec`
//! process running a 10-round tool-calling turn (the `exec_turn` script)
//! with `--store` on each.
//!
//! Run: `cargo bench -p gantry-cli --bench store_backends` (`BENCH_RUNS=N`
//! exec runs per store, 10 by default). PostgreSQL is the server of
//! `GANTRY_TEST_POSTGRES` (default `postgres://postgres@127.0.0.1:5432`),
//! in a fresh database dropped afterwards (`GANTRY_TEST_NO_POSTGRES=1`
//! skips it where none runs).

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gantry_store::{Commit, PostgresStore, SqliteStore, Store};
use gantry_testkit::postgres::TestDatabase;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::{
    Event, EventPayload, Item, ItemId, ItemKind, ItemStatus, Thread, ThreadId, ThreadStatus, TurnId,
};
use serde_json::json;

/// Events per append run, and the batch sizes committed.
const EVENTS: u64 = 10_000;
const BATCHES: [u64; 2] = [100, 1];
/// Writers committing side by side (each to a thread of its own).
const WRITERS: u64 = 4;

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = runtime.enter();
    let scratch = tempfile::tempdir().expect("tempdir");

    // Each append run gets an empty store of its own: a fresh SQLite file,
    // a fresh PostgreSQL database. So do the exec runs: the append runs
    // leave threads marked running, which an engine would recover at start.
    let exec_postgres = runtime.block_on(TestDatabase::create());
    let mut backends = vec!["sqlite"];
    match &exec_postgres {
        Some(_) => backends.push("postgres"),
        None => println!("postgres: skipped (GANTRY_TEST_NO_POSTGRES=1)"),
    }

    println!("event append through the Store port, {EVENTS} events, one thread per writer");
    for name in &backends {
        for batch in BATCHES {
            for writers in [1, WRITERS] {
                let (store, _db) = runtime.block_on(open(name, scratch.path()));
                let took = runtime.block_on(append(store, batch, writers));
                println!(
                    "  {name:<8} batches of {batch:>3}, {writers} writer(s): {:>8.0} events/s ({:.1} ms)",
                    EVENTS as f64 / took.as_secs_f64(),
                    took.as_secs_f64() * 1e3
                );
            }
        }
    }

    println!("gantry exec, 10 tool rounds + final answer, {runs} runs per store");
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let exec_stores = [
        Some((
            "sqlite",
            format!("sqlite://{}", scratch.path().join("exec.db").display()),
        )),
        exec_postgres.as_ref().map(|db| ("postgres", db.url())),
    ];
    for (name, url) in exec_stores.iter().flatten() {
        let data = scratch.path().join(format!("data-{name}"));
        let mut walls = Vec::with_capacity(runs);
        // One warm-up run creates the schema, as a user's first run does.
        for run in 0..=runs {
            let llm = MockLlm::start(script()).expect("mock llm");
            let ws = scratch.path().join(format!("ws-{name}-{run}"));
            std::fs::create_dir_all(&ws).expect("workspace");
            let start = Instant::now();
            let status = Command::new(env!("CARGO_BIN_EXE_gantry"))
                .args(["exec", "--base-url", &llm.base_url(), "--model", "bench"])
                .args(["--store", url, "write the files"])
                .arg("--cwd")
                .arg(&ws)
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", &home)
                .env("GANTRY_DATA_DIR", &data)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("run gantry");
            let wall = start.elapsed();
            assert!(status.success(), "gantry exec on {name} failed: {status}");
            assert_eq!(llm.request_count(), 11, "all 11 model rounds ran");
            if run > 0 {
                walls.push(wall.as_secs_f64() * 1000.0);
            }
        }
        walls.sort_by(f64::total_cmp);
        println!(
            "  {name:<8} wall ms: median {:.1}  min {:.1}  max {:.1}",
            walls[walls.len() / 2],
            walls[0],
            walls[walls.len() - 1]
        );
    }
    drop(exec_postgres);
}

/// An empty store of backend `name` (and the database to drop after it).
async fn open(name: &str, dir: &std::path::Path) -> (Arc<dyn Store>, Option<TestDatabase>) {
    if name == "postgres" {
        let db = TestDatabase::create().await.expect("postgres");
        let store = PostgresStore::open(&db.url(), &dir.join("secret.key"))
            .await
            .expect("open postgres");
        return (Arc::new(store), Some(db));
    }
    let path = dir.join(format!("append-{}.db", ThreadId::new()));
    let store = SqliteStore::open(&path).await.expect("open sqlite");
    (Arc::new(store), None)
}

/// Commits `EVENTS` events in batches of `batch` from `writers` tasks at
/// once, each on a thread of its own; how long it took.
async fn append(store: Arc<dyn Store>, batch: u64, writers: u64) -> Duration {
    let per_writer = EVENTS / writers;
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                let id = ThreadId::new();
                let turn = TurnId::new();
                let mut thread = thread(&id);
                for first in (1..=per_writer).step_by(batch as usize) {
                    let last = (first + batch - 1).min(per_writer);
                    let events = (first..=last).map(|seq| event(&id, &turn, seq)).collect();
                    thread.last_seq = last;
                    store
                        .commit(&Commit {
                            events,
                            threads: vec![thread.clone()],
                        })
                        .await
                        .expect("commit");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("writer");
    }
    start.elapsed()
}

/// A completed agent message of ~300 bytes of JSON, as a turn writes.
fn event(id: &ThreadId, turn: &TurnId, seq: u64) -> Event {
    let item = Item {
        id: ItemId::new(),
        turn_id: turn.clone(),
        round: 1,
        status: ItemStatus::Completed,
        started_at: 1_700_000_000_000,
        completed_at: Some(1_700_000_000_100),
        kind: ItemKind::AgentMessage {
            text: "lorem ipsum dolor sit amet ".repeat(6),
        },
        tool_call: None,
    };
    Event {
        thread_id: id.clone(),
        seq,
        ts: 1_700_000_000_000 + seq as i64,
        turn_id: Some(turn.clone()),
        item_id: Some(item.id.clone()),
        payload: EventPayload::ItemCompleted { item },
        cursor: 0,
    }
}

fn thread(id: &ThreadId) -> Thread {
    Thread {
        id: id.clone(),
        name: None,
        cwd: "/work/ws".into(),
        model: "gpt-bench".into(),
        reasoning: None,
        instructions: None,
        endpoint: None,
        temperature: None,
        max_output_tokens: None,
        metadata: Default::default(),
        status: ThreadStatus::Running,
        archived: false,
        preview: "benchmark".into(),
        created_at: 1_700_000_000_000,
        updated_at: 1_700_000_000_000,
        forked_from: None,
        agent_id: None,
        usage: Default::default(),
        cost_usd: 0.0,
        paused: false,
        policy: Default::default(),
        lane_handlers: Vec::new(),
        todos: Vec::new(),
        goal: None,
        last_seq: 0,
    }
}

/// The `exec_turn` bench's turn: 5 × (shell, edit_file), then an answer.
fn script() -> Script {
    let mut steps = Vec::new();
    for i in 1..=5 {
        steps.push(
            Step::tool_call(
                "shell",
                json!({"command": format!("printf 'value = {i}\\n' > f{i}.txt")}),
            )
            .with_text(format!("Creating file {i}.")),
        );
        steps.push(Step::tool_call(
            "edit_file",
            json!({"path": format!("f{i}.txt"), "old_string": format!("value = {i}"), "new_string": "done"}),
        ));
    }
    steps.push(Step::text("All files written."));
    Script::new(steps)
}

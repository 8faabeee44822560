//! Rough timings for the README: open + migrate (fresh and existing file) and
//! committing 10k events in batches of 100. Run it by hand:
//! `cargo run --release -p gantry-store --example store_bench [DIR]`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use gantry_store::{Commit, MemoryStore, SqliteStore, Store};
use gantry_types::{
    Event, EventPayload, Item, ItemId, ItemKind, ItemStatus, Thread, ThreadId, ThreadStatus,
    TurnId, Usage,
};

const EVENTS: u64 = 10_000;
const BATCH: u64 = 100;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| tmp.path().to_owned(), PathBuf::from);
    let path = dir.join(format!("bench-{}.db", std::process::id()));

    let (store, fresh) = timed(SqliteStore::open(&path)).await;
    let store = store?;
    println!("open + migrate, fresh file:    {}", ms(fresh));
    store.close().await;
    let (store, existing) = timed(SqliteStore::open(&path)).await;
    let store = store?;
    println!("open + migrate, existing file: {}", ms(existing));

    let (res, took) = timed(commit_all(&store)).await;
    res?;
    println!(
        "sqlite: {EVENTS} events in batches of {BATCH}: {}",
        ms(took)
    );
    let (all, took) = timed(store.events_after(0, usize::MAX)).await;
    println!("sqlite: read back {} events: {}", all?.len(), ms(took));
    store.close().await;

    let memory = MemoryStore::new();
    let (res, took) = timed(commit_all(&memory)).await;
    res?;
    println!(
        "memory: {EVENTS} events in batches of {BATCH}: {}",
        ms(took)
    );
    Ok(())
}

async fn timed<T>(f: impl Future<Output = T>) -> (T, Duration) {
    let start = Instant::now();
    let out = f.await;
    (out, start.elapsed())
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// One thread; each commit appends 100 completed agent messages (~300 bytes
/// of JSON each) and upserts the thread row, as the engine's group commit does.
async fn commit_all(store: &dyn Store) -> Result<(), gantry_store::StoreError> {
    let id = ThreadId::new();
    let turn = TurnId::new();
    let mut thread = Thread {
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
        usage: Usage::default(),
        cost_usd: 0.0,
        paused: false,
        policy: Default::default(),
        lane_handlers: Vec::new(),
        todos: Vec::new(),
        goal: None,
        last_seq: 0,
    };
    for start in (1..=EVENTS).step_by(BATCH as usize) {
        let events = (start..start + BATCH)
            .map(|seq| {
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
            })
            .collect();
        thread.last_seq = start + BATCH - 1;
        store
            .commit(&Commit {
                events,
                threads: vec![thread.clone()],
            })
            .await?;
    }
    Ok(())
}

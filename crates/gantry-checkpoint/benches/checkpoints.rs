//! What checkpoints cost on a generated 10,000-file repository: the first
//! checkpoint, an incremental one after 10 files changed, a rewind, and the
//! store's size over 100 turns of 10 changed files each.
//!
//! Run: `cargo bench -p gantry-checkpoint --bench checkpoints`
//! (`BENCH_FILES=N`, 10,000 by default; `BENCH_TURNS=N`, 100). Besides the
//! time each takes, the CPU time the incremental checkpoints spent (this
//! process and its `git` children), which a loaded machine does not
//! inflate as it does the wall clock.

use std::path::Path;
use std::time::{Duration, Instant};

use gantry_checkpoint::CheckpointStore;

fn main() {
    let files: usize = env_or("BENCH_FILES", 10_000);
    let turns: usize = env_or("BENCH_TURNS", 100);
    let scratch = tempfile::tempdir().expect("tempdir");
    let ws = scratch.path().join("ws");
    let store_dir = scratch.path().join("data/checkpoints/thread.git");
    generate(&ws, files);

    let store = CheckpointStore::open(&store_dir, &ws).expect("store");
    let first = timed(|| store.record("first").expect("first checkpoint"));
    let before = du(&store_dir);

    let mut incremental = Vec::new();
    let mut ids = Vec::new();
    let mut cpu = (Duration::ZERO, Duration::ZERO);
    for turn in 0..turns {
        change_ten(&ws, files, turn);
        let cpu_before = cpu_time();
        let (took, checkpoint) = timed_value(|| store.record("turn").expect("checkpoint"));
        let cpu_after = cpu_time();
        cpu.0 += cpu_after.0.saturating_sub(cpu_before.0);
        cpu.1 += cpu_after.1.saturating_sub(cpu_before.1);
        assert_eq!(checkpoint.files_changed.len(), 10);
        incremental.push(took);
        ids.push(checkpoint.id);
    }
    let after = du(&store_dir);
    let unchanged = timed(|| store.record("unchanged").expect("checkpoint"));

    let rewind_ten = timed(|| store.restore(&ids[turns - 2]).expect("rewind 10 files"));
    let rewind_all = timed(|| store.restore(&ids[0]).expect("rewind"));

    incremental.sort();
    let median = incremental[incremental.len() / 2];
    let worst = incremental[incremental.len() - 1];
    println!("files in workspace: {files}");
    println!("first checkpoint: {first:?}");
    println!("incremental checkpoint, 10 files changed: median {median:?}, worst {worst:?}");
    println!(
        "incremental checkpoint, CPU time: {:?} on average ({:?} in git, {:?} in the store's own code)",
        (cpu.0 + cpu.1) / turns as u32,
        cpu.1 / turns as u32,
        cpu.0 / turns as u32,
    );
    println!("checkpoint with nothing changed: {unchanged:?}");
    println!("rewind one turn back (10 files): {rewind_ten:?}");
    println!("rewind {turns} turns back: {rewind_all:?}");
    println!(
        "store size: {} KiB after the first checkpoint, {} KiB after {turns} more turns ({} KiB per turn)",
        before / 1024,
        after / 1024,
        (after - before) / 1024 / turns as u64
    );
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `files` source-sized files in 100 directories, with a `.gitignore`.
fn generate(ws: &Path, files: usize) {
    for i in 0..files {
        let dir = ws.join(format!("src/mod{:03}", i % 100));
        std::fs::create_dir_all(&dir).expect("dir");
        let body = format!("// file {i}\n{}", "fn item() -> u32 { 42 }\n".repeat(40));
        std::fs::write(dir.join(format!("file{i}.rs")), body).expect("file");
    }
    std::fs::write(ws.join(".gitignore"), "target/\n").expect("gitignore");
}

/// Edits 10 files, different ones each turn.
fn change_ten(ws: &Path, files: usize, turn: usize) {
    for k in 0..10 {
        let i = (turn * 10 + k) * 7 % files;
        let path = ws.join(format!("src/mod{:03}/file{i}.rs", i % 100));
        let mut body = std::fs::read_to_string(&path).expect("read");
        body.push_str(&format!("// turn {turn}\n"));
        std::fs::write(path, body).expect("write");
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> Duration {
    timed_value(f).0
}

fn timed_value<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let value = f();
    (start.elapsed(), value)
}

/// The CPU time (user and system) of this process, and of its children
/// waited for, from `/proc/self/stat` (clock ticks, 100 a second).
fn cpu_time() -> (Duration, Duration) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the command's name in parentheses: fields 14 to 17.
    let fields: Vec<u64> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default()
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|f| f.parse().ok())
        .collect();
    let ticks = |range: std::ops::Range<usize>| {
        Duration::from_millis(fields.get(range).map_or(0, |f| f.iter().sum::<u64>()) * 10)
    };
    (ticks(0..2), ticks(2..4))
}

/// Bytes under `dir`.
fn du(dir: &Path) -> u64 {
    let mut total = 0;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        total += if meta.is_dir() {
            du(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

//! Wall time and peak RSS of a whole `gantry exec` process running a 10-round
//! tool-calling turn (5 × shell + edit_file, then a final answer) against the
//! testkit server with zero delay.
//!
//! Run: `cargo bench -p gantry-cli --bench exec_turn` (`BENCH_RUNS=N` to change
//! the number of runs, 20 by default; `BENCH_GANTRY=PATH` to run another
//! `gantry` binary: the release build, say, since cargo builds benches'
//! `gantry` with `panic = "unwind"`, which `link/hot-text.txt` fits less well).

use std::process::{Command, Stdio};
use std::time::Instant;

use gantry_testkit::{MockLlm, Script};
use nix::sys::resource::{UsageWho, getrusage};

/// The task, shared with `link/make-hot-text.py`: 5 × (shell + edit_file),
/// then an answer.
fn script() -> Script {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/exec_turn.json");
    Script::from_file(path).expect("benches/exec_turn.json")
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = runtime.enter();
    let scratch = tempfile::tempdir().expect("tempdir");
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).expect("home");

    let gantry = std::env::var_os("BENCH_GANTRY").map_or_else(
        || env!("CARGO_BIN_EXE_gantry").into(),
        std::path::PathBuf::from,
    );
    let mut walls = Vec::with_capacity(runs);
    // One warm-up run creates the database, as a user's first run does.
    for run in 0..=runs {
        let llm = MockLlm::start(script()).expect("mock llm");
        let ws = scratch.path().join(format!("ws{run}"));
        std::fs::create_dir_all(&ws).expect("workspace");
        let start = Instant::now();
        let status = Command::new(&gantry)
            .args([
                "exec",
                "--base-url",
                &llm.base_url(),
                "--model",
                "bench",
                "write the files",
            ])
            .arg("--cwd")
            .arg(&ws)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            // A bare home keeps the machine's login profile out of `bash -lc`:
            // this measures Gantry, not ~/.bashrc.
            .env("HOME", &home)
            .env("GANTRY_DATA_DIR", scratch.path().join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run gantry");
        let wall = start.elapsed();
        assert!(status.success(), "gantry exec failed: {status}");
        assert_eq!(llm.request_count(), 11, "all 11 model rounds ran");
        if run > 0 {
            walls.push(wall.as_secs_f64() * 1000.0);
        }
    }
    walls.sort_by(f64::total_cmp);
    let peak_kb = getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0, |u| u.max_rss());
    println!("gantry exec, 10 tool rounds + final answer, {runs} runs");
    println!(
        "  wall ms: median {:.1}  min {:.1}  max {:.1}",
        walls[walls.len() / 2],
        walls[0],
        walls[walls.len() - 1]
    );
    println!("  peak RSS: {:.1} MB", peak_kb as f64 / 1024.0);
}

//! `gantry acp` as an editor sees it: from spawning the process to its
//! `initialize` answer, and from sending `session/prompt` to the first
//! `agent_message_chunk` (the engine's turn start, the model request to
//! the testkit server with zero delay, its first token, the update out).
//!
//! Run: `cargo bench -p gantry-cli --bench acp_stdio` (`BENCH_RUNS=N` to
//! change the number of runs, 20 by default).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use gantry_testkit::{MockLlm, Script, Step};
use serde_json::{Value, json};

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
    let ws = scratch.path().join("ws");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&ws).expect("workspace");
    let ws = std::fs::canonicalize(&ws).expect("workspace path");
    let (mut inits, mut firsts) = (Vec::new(), Vec::new());
    // One warm-up run creates the database, as a user's first run does.
    for run in 0..=runs {
        let llm = MockLlm::start(Script::new(vec![Step::text(
            "Hello from the bench, in a few chunks of text.",
        )]))
        .expect("mock llm");
        let start = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_gantry"))
            .args(["acp", "--base-url", &llm.base_url(), "--model", "bench"])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("GANTRY_DATA_DIR", scratch.path().join("data"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run gantry acp");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut send = |msg: Value| {
            writeln!(stdin, "{msg}").expect("write");
            stdin.flush().expect("flush");
        };
        let mut until = |test: &dyn Fn(&Value) -> bool| loop {
            let line = lines.next().expect("a line").expect("read");
            let msg: Value = serde_json::from_str(&line).expect("JSON");
            if test(&msg) {
                return msg;
            }
        };
        send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
        );
        until(&|m| m["id"] == 0);
        let init = start.elapsed();
        send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                    "params": {"cwd": ws, "mcpServers": []}}));
        let session = until(&|m| m["id"] == 1)["result"]["sessionId"].clone();
        let prompted = Instant::now();
        send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                    "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}),
        );
        until(&|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk");
        let first = prompted.elapsed();
        let done = until(&|m| m["id"] == 2);
        assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
        drop(stdin);
        assert!(child.wait().expect("exit").success());
        if run > 0 {
            inits.push(init.as_secs_f64() * 1000.0);
            firsts.push(first.as_secs_f64() * 1000.0);
        }
    }
    println!("gantry acp over stdio, {runs} runs (SQLite data dir, testkit model, zero delay)");
    for (name, mut ms) in [
        ("spawn to initialize answered", inits),
        ("prompt to first agent_message_chunk", firsts),
    ] {
        ms.sort_by(f64::total_cmp);
        println!(
            "  {name}: median {:.1} ms  min {:.1}  p90 {:.1}",
            ms[ms.len() / 2],
            ms[0],
            ms[ms.len() * 9 / 10]
        );
    }
}

//! Rome's agent runner over NDJSON on a real `gantry serve --rome-addr`
//! process (SQLite file store) over loopback, the scripted model with zero
//! delay:
//! 1. runs one after another, each in a fresh session: `POST /v1/rome/run`
//!    read to its `turn_end`;
//! 2. runs of 8 sessions (channel thread keys) at once, each session's runs
//!    one after another, as a Rome host with several chats would;
//! 3. lines per second to one client: one turn whose answer streams one
//!    character per model event, each a `text_delta` line.
//!
//! Run: `cargo bench -p gantry-cli --bench rome_ndjson`
//! (`BENCH_RUNS=N`, 300 by default; `BENCH_CHUNKS=N`, 100000 by default).

use std::process::Child;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use gantry_testkit::{MockLlm, Script, Step};
use serde_json::{Value, json};

#[path = "support/serve.rs"]
mod support;
use support::{Listener, serve_with};

const TOKEN: &str = "bench-token";
const SESSIONS: usize = 8;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `gantry serve` whose agent `main` runs on `llm`; the child and the base
/// URL of its Rome listener.
fn serve(scratch: &std::path::Path, llm: &MockLlm) -> (Child, String) {
    std::fs::create_dir_all(scratch).expect("scratch");
    let token = scratch.join("token");
    std::fs::write(&token, TOKEN).expect("token");
    let listener = Listener {
        args: vec![
            "--rome-addr".into(),
            "127.0.0.1:0".into(),
            "--rome-token-file".into(),
            token.into_os_string(),
        ],
        config: "[agents.main]\ninstructions = \"Answer.\"\n",
        ready: "gantry: serving the Rome agent runner on ",
    };
    let (child, addr) = serve_with(scratch, llm, listener);
    (child, format!("http://{addr}"))
}

/// One run read to its `turn_end`: the lines, and the answer's text bytes
/// its `text_delta`s carried.
async fn run(http: &reqwest::Client, base: &str, body: &Value) -> (usize, usize) {
    let response = http
        .post(format!("{base}/v1/rome/run"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("run");
    assert_eq!(response.status(), 200, "the run was refused");
    let mut body = response.bytes_stream();
    let mut buffer = Vec::new();
    let (mut lines, mut text) = (0, 0);
    while let Some(chunk) = body.next().await {
        buffer.extend_from_slice(&chunk.expect("body"));
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            lines += 1;
            if line.starts_with(b"{\"type\":\"text_delta\"") {
                let message: Value = serde_json::from_slice(&line).expect("line JSON");
                text += message["content"].as_str().map_or(0, str::len);
            } else if line.starts_with(b"{\"type\":\"turn_end\"") {
                assert!(
                    line.windows(11).any(|w| w == b"\"completed\""),
                    "the run failed"
                );
                return (lines, text);
            }
        }
    }
    panic!("the stream ended before the turn did");
}

fn report(what: &str, runs: usize, elapsed: Duration, mut times: Vec<Duration>) {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    println!(
        "{what}, {runs} runs: {:.0} runs/s; p50 {:.2} ms, p99 {:.2} ms",
        runs as f64 / elapsed.as_secs_f64(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
    );
}

fn main() {
    let runs = env_or("BENCH_RUNS", 300);
    let chunks = env_or("BENCH_CHUNKS", 100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        // reqwest builds a rustls config even for plain HTTP.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");

        // 1. Sequential runs, each in a fresh session.
        let scratch = tempfile::tempdir().expect("scratch");
        let steps = (0..runs).map(|_| Step::text("ok").with_chunk_size(64));
        let llm = MockLlm::start(Script::new(steps)).expect("mock model");
        let (mut server, base) = serve(scratch.path(), &llm);
        let body = json!({"agentName": "main", "prompt": "hi"});
        let mut times = Vec::with_capacity(runs);
        let all = Instant::now();
        for _ in 0..runs {
            let start = Instant::now();
            run(&http, &base, &body).await;
            times.push(start.elapsed());
        }
        report("run to turn_end, sequential, fresh sessions", runs, all.elapsed(), times);
        let _ = server.kill();
        let _ = server.wait();
        drop(llm);

        // 2. 8 sessions at once, each continued by its key.
        let scratch = tempfile::tempdir().expect("scratch");
        let per = runs.div_ceil(SESSIONS);
        let steps = (0..per * SESSIONS).map(|_| Step::text("ok").with_chunk_size(64));
        let llm = MockLlm::start(Script::new(steps)).expect("mock model");
        let (mut server, base) = serve(scratch.path(), &llm);
        let all = Instant::now();
        let tasks: Vec<_> = (0..SESSIONS)
            .map(|s| {
                let (http, base) = (http.clone(), base.clone());
                tokio::spawn(async move {
                    let body = json!({"agentName": "main", "prompt": "hi", "channelThreadKey": format!("chat:{s}")});
                    let mut times = Vec::with_capacity(per);
                    for _ in 0..per {
                        let start = Instant::now();
                        run(&http, &base, &body).await;
                        times.push(start.elapsed());
                    }
                    times
                })
            })
            .collect();
        let mut times = Vec::new();
        for task in tasks {
            times.extend(task.await.expect("session"));
        }
        report(
            &format!("run to turn_end, {SESSIONS} sessions at once"),
            per * SESSIONS,
            all.elapsed(),
            times,
        );
        let _ = server.kill();
        let _ = server.wait();
        drop(llm);

        // 3. Lines to one client.
        let scratch = tempfile::tempdir().expect("scratch");
        let text: String = std::iter::repeat_n('x', chunks).collect();
        let llm = MockLlm::start(Script::new([Step::text(text).with_chunk_size(1)]))
            .expect("mock model");
        let (mut server, base) = serve(scratch.path(), &llm);
        let start = Instant::now();
        let (lines, text) = tokio::time::timeout(
            Duration::from_secs(600),
            run(&http, &base, &json!({"agentName": "main", "prompt": "stream"})),
        )
        .await
        .expect("the turn ended in time");
        let elapsed = start.elapsed();
        // Every character once, however the deltas were cut.
        assert_eq!(text, chunks, "the answer's text came whole and once");
        println!(
            "NDJSON: {lines} lines carrying {chunks} one-character deltas in {:.2} s: {:.0} lines/s, \
             {:.0} characters/s to one client",
            elapsed.as_secs_f64(),
            lines as f64 / elapsed.as_secs_f64(),
            chunks as f64 / elapsed.as_secs_f64(),
        );
        let _ = server.kill();
        let _ = server.wait();
    });
}

//! CodeWhale over HTTP on a real `gantry serve --codewhale-addr` process
//! (SQLite file store) over loopback, the scripted model with zero delay:
//! 1. round trips of a whole conversation step, one after another: `POST
//!    /thread` create, `POST /thread` message, and the turn followed over
//!    SSE to its `turn_complete`;
//! 2. SSE frames per second to one client: one turn whose answer streams
//!    one character per model event, each a `response_delta` frame.
//!
//! Run: `cargo bench -p gantry-cli --bench codewhale_http`
//! (`BENCH_TURNS=N`, 300 by default; `BENCH_CHUNKS=N`, 100000 by default).

use std::process::Child;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use gantry_testkit::{MockLlm, Script, Step};
use serde_json::{Value, json};

#[path = "support/serve.rs"]
mod support;
use support::{Listener, serve_with};

const TOKEN: &str = "bench-token";

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `gantry serve` whose default model is `llm`; the child and the base URL
/// of its CodeWhale listener.
fn serve(scratch: &std::path::Path, llm: &MockLlm) -> (Child, String) {
    std::fs::create_dir_all(scratch).expect("scratch");
    let token = scratch.join("token");
    std::fs::write(&token, TOKEN).expect("token");
    let listener = Listener {
        args: vec![
            "--codewhale-addr".into(),
            "127.0.0.1:0".into(),
            "--codewhale-token-file".into(),
            token.into_os_string(),
        ],
        config: "",
        ready: "gantry: serving CodeWhale HTTP on ",
    };
    let (child, addr) = serve_with(scratch, llm, listener);
    (child, format!("http://{addr}"))
}

async fn post(http: &reqwest::Client, url: &str, body: Value) -> Value {
    http.post(url)
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON answer")
}

/// Follows a thread's frames to its first `turn_complete`; how many
/// frames, and the bytes of answer text they carried.
async fn follow_turn(http: &reqwest::Client, base: &str, thread: &str) -> (usize, usize) {
    let response = http
        .get(format!("{base}/thread/{thread}/events"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("SSE");
    let mut body = response.bytes_stream();
    let mut buffer = Vec::new();
    let mut frames = 0;
    let mut text = 0;
    while let Some(chunk) = body.next().await {
        buffer.extend_from_slice(&chunk.expect("SSE body"));
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            if let Some(data) = line.strip_prefix(b"data: ") {
                frames += 1;
                if data.windows(15).any(|w| w == b"\"turn_complete\"") {
                    return (frames, text);
                }
                if data.starts_with(b"{\"event\":\"response_delta\"") {
                    let frame: Value = serde_json::from_slice(data).expect("frame JSON");
                    text += frame["delta"].as_str().map_or(0, str::len);
                }
            }
        }
    }
    panic!("the stream ended before the turn did");
}

fn main() {
    let turns = env_or("BENCH_TURNS", 300);
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

        // 1. Conversation round trips.
        let scratch = tempfile::tempdir().expect("scratch");
        let steps = (0..turns).map(|_| Step::text("ok").with_chunk_size(64));
        let llm = MockLlm::start(Script::new(steps)).expect("mock model");
        let (mut server, base) = serve(scratch.path(), &llm);
        let mut times = Vec::with_capacity(turns);
        let all = Instant::now();
        for _ in 0..turns {
            let start = Instant::now();
            let created = post(&http, &format!("{base}/thread"), json!({"kind": "create"})).await;
            let thread = created["thread_id"].as_str().expect("thread id").to_owned();
            let accepted = post(
                &http,
                &format!("{base}/thread"),
                json!({"kind": "message", "thread_id": thread, "input": "hi"}),
            )
            .await;
            assert_eq!(accepted["status"], "accepted");
            follow_turn(&http, &base, &thread).await;
            times.push(start.elapsed());
        }
        let elapsed = all.elapsed();
        times.sort();
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
        println!(
            "create + message + turn over SSE, {turns} sequential: {:.0}/s; p50 {:.2} ms, p99 {:.2} ms",
            turns as f64 / elapsed.as_secs_f64(),
            at(0.5).as_secs_f64() * 1e3,
            at(0.99).as_secs_f64() * 1e3,
        );
        let _ = server.kill();
        let _ = server.wait();
        drop(llm);

        // 2. SSE frames to one client.
        let scratch = tempfile::tempdir().expect("scratch");
        let text: String = std::iter::repeat_n('x', chunks).collect();
        let llm = MockLlm::start(Script::new([Step::text(text).with_chunk_size(1)]))
            .expect("mock model");
        let (mut server, base) = serve(scratch.path(), &llm);
        let created = post(&http, &format!("{base}/thread"), json!({"kind": "create"})).await;
        let thread = created["thread_id"].as_str().expect("thread id").to_owned();
        let follower = {
            let http = http.clone();
            let base = base.clone();
            let thread = thread.clone();
            tokio::spawn(async move { follow_turn(&http, &base, &thread).await })
        };
        let start = Instant::now();
        post(
            &http,
            &format!("{base}/thread"),
            json!({"kind": "message", "thread_id": thread, "input": "stream"}),
        )
        .await;
        let (frames, text) = tokio::time::timeout(Duration::from_secs(600), follower)
            .await
            .expect("the turn ended in time")
            .expect("follower");
        let elapsed = start.elapsed();
        // Every character once, however the deltas were cut.
        assert_eq!(text, chunks, "the answer's text came whole and once");
        println!(
            "SSE: {frames} frames carrying {chunks} one-character deltas in {:.2} s: {:.0} frames/s, \
             {:.0} characters/s to one client",
            elapsed.as_secs_f64(),
            frames as f64 / elapsed.as_secs_f64(),
            chunks as f64 / elapsed.as_secs_f64(),
        );
        let _ = server.kill();
        let _ = server.wait();
    });
}

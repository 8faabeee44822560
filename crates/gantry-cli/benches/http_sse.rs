//! The HTTP API's SSE on a real `gantry serve --http-addr` process (SQLite
//! file store) over loopback, the scripted model with zero delay: one turn
//! whose answer streams one character per model event, each a `delta` SSE
//! event, followed by 1 and by 100 clients of the thread's stream; events
//! per second to each client and in total.
//!
//! Run: `cargo bench -p gantry-cli --bench http_sse`
//! (`BENCH_CHUNKS=N`, 20000 by default).

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use gantry_testkit::{MockLlm, Script, Step};
use serde_json::{Value, json};

#[path = "support/serve.rs"]
mod http_serve;
use http_serve::serve;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Follows a thread's events to its `turn_completed`; `ready` is sent once
/// the stream is open (its first event arrived). How many SSE events, and
/// the bytes of answer text their deltas carried.
async fn follow(
    http: reqwest::Client,
    url: String,
    ready: tokio::sync::mpsc::Sender<()>,
) -> (usize, usize) {
    let response = http.get(url).send().await.expect("SSE");
    let mut body = response.bytes_stream();
    let mut buffer = Vec::new();
    let (mut events, mut text) = (0, 0);
    while let Some(chunk) = body.next().await {
        buffer.extend_from_slice(&chunk.expect("SSE body"));
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            if line.starts_with(b"event: ") {
                events += 1;
                if events == 1 {
                    let _ = ready.send(()).await;
                }
                if line.starts_with(b"event: turn_completed") {
                    return (events, text);
                }
            }
            if let Some(data) = line.strip_prefix(b"data: ")
                && data.windows(20).any(|w| w == b"\"delta\":\"agent_text\"")
            {
                let delta: Value = serde_json::from_slice(data).expect("delta JSON");
                text += delta["text"].as_str().map_or(0, str::len);
            }
        }
    }
    panic!("the stream ended before the turn did");
}

fn main() {
    // reqwest is built without a crypto provider (the server is plain HTTP).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let chunks = env_or("BENCH_CHUNKS", 20_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        for clients in [1usize, 100] {
            let scratch = tempfile::tempdir().expect("scratch");
            let text: String = std::iter::repeat_n('x', chunks).collect();
            let llm = MockLlm::start(Script::new([Step::text(text).with_chunk_size(1)]))
                .expect("mock model");
            let (mut server, base) = serve(scratch.path(), &llm);
            let created: Value = http
                .post(format!("http://{base}/v1/threads"))
                .json(&json!({}))
                .send()
                .await
                .expect("create")
                .json()
                .await
                .expect("JSON");
            let thread = created["id"].as_str().expect("thread id").to_owned();
            let (ready_tx, mut ready) = tokio::sync::mpsc::channel(clients);
            let followers: Vec<_> = (0..clients)
                .map(|_| {
                    let url = format!("http://{base}/v1/threads/{thread}/events");
                    tokio::spawn(follow(http.clone(), url, ready_tx.clone()))
                })
                .collect();
            for _ in 0..clients {
                ready.recv().await.expect("a follower opened its stream");
            }
            let start = Instant::now();
            http.post(format!("http://{base}/v1/threads/{thread}/messages"))
                .json(&json!({"text": "stream"}))
                .send()
                .await
                .expect("send");
            let mut total = 0;
            for follower in followers {
                let (events, text) = tokio::time::timeout(Duration::from_secs(600), follower)
                    .await
                    .expect("the turn ended in time")
                    .expect("follower");
                assert_eq!(text, chunks, "every client got the answer whole and once");
                total += events;
            }
            let elapsed = start.elapsed().as_secs_f64();
            println!(
                "SSE to {clients} client(s): {chunks} one-character deltas in {elapsed:.2} s: \
                 {:.0} events/s per client, {:.0} events/s in total",
                total as f64 / clients as f64 / elapsed,
                total as f64 / elapsed,
            );
            let _ = server.kill();
            let _ = server.wait();
        }
    });
}

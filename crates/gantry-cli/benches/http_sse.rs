//! The HTTP API's SSE on a real `gantry serve --http-addr` process (SQLite
//! file store) over loopback, the scripted model with zero delay: one turn
//! whose answer streams one character per model event, each a `delta` SSE
//! event, followed by 1 and by 100 clients of the thread's stream; events
//! per second to each client and in total.
//!
//! Run: `cargo bench -p gantry-cli --bench http_sse`
//! (`BENCH_CHUNKS=N`, 20000 by default).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use gantry_testkit::{MockLlm, Script, Step};
use serde_json::{Value, json};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `gantry serve --http-addr` whose default model is `llm`; the child and
/// the API's base URL.
fn serve(scratch: &std::path::Path, llm: &MockLlm) -> (Child, String) {
    let home = scratch.join("home");
    let ws = scratch.join("ws");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&ws).expect("workspace");
    let config = scratch.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "default_model = \"mock/bench\"\n[providers.mock]\nkind = \"openai-chat\"\n\
             base_url = \"{}\"\napi_key = \"bench\"\nmodels = [\"bench\"]\n",
            llm.base_url()
        ),
    )
    .expect("config");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gantry"))
        .arg("--config")
        .arg(&config)
        .args(["serve", "--listen-addr", "127.0.0.1:0", "--workspace"])
        .arg(&ws)
        .arg("--data-dir")
        .arg(scratch.join("data"))
        .args(["--http-addr", "127.0.0.1:0"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gantry serve");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("gantry serve said nothing")
            .expect("stderr");
        if let Some(addr) =
            line.strip_prefix("gantry: serving the HTTP API and dashboard on http://")
        {
            break addr.trim().trim_end_matches('/').to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
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

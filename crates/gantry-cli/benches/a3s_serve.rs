//! The A3S gRPC service of a real `gantry serve` process over loopback:
//! 1. `StreamGenerate` throughput and first-chunk latency with a zero-delay
//!    model that streams one character per event;
//! 2. 100 concurrent sessions, each running a 10-round turn (9 `read_file`
//!    calls, then an answer), each against its own mock model server:
//!    total time and the server's peak RSS.
//!
//! Run: `cargo bench -p gantry-cli --bench a3s_serve` (`BENCH_CHUNKS=N`,
//! 100000 by default; `BENCH_SESSIONS=N`, 100 by default).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gantry_testkit::{MockLlm, Step};
use proto_code_agent::pb;
use proto_code_agent::pb::code_agent_service_client::CodeAgentServiceClient;
use serde_json::json;
use tonic::transport::Channel;

type Client = CodeAgentServiceClient<Channel>;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Starts `gantry serve` on an ephemeral port; the child and its address.
fn serve(scratch: &std::path::Path) -> (Child, String) {
    let home = scratch.join("home");
    let ws = scratch.join("ws");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&ws).expect("workspace");
    std::fs::write(ws.join("notes.txt"), "a small file the agent reads\n").expect("file");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gantry"))
        .args(["serve", "--listen-addr", "127.0.0.1:0", "--workspace"])
        .arg(&ws)
        .arg("--data-dir")
        .arg(scratch.join("data"))
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
        if let Some(addr) = line
            .split(" on ")
            .nth(1)
            .filter(|_| line.contains("serving"))
        {
            break addr.trim().to_owned();
        }
    };
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

async fn session(client: &mut Client, llm: &MockLlm) -> String {
    let config = pb::SessionConfig {
        llm: Some(pb::LlmConfig {
            provider: "openai".into(),
            model: "bench-model".into(),
            api_key: "bench".into(),
            base_url: llm.base_url(),
            ..Default::default()
        }),
        ..Default::default()
    };
    client
        .create_session(pb::CreateSessionRequest {
            config: Some(config),
            ..Default::default()
        })
        .await
        .expect("create session")
        .into_inner()
        .session_id
}

fn ask(session: &str) -> pb::GenerateRequest {
    pb::GenerateRequest {
        session_id: session.to_owned(),
        messages: vec![pb::Message {
            role: "user".into(),
            content: "go".into(),
            metadata: Default::default(),
        }],
    }
}

/// One streamed turn of `chunks` one-character events: (chunks/s, first
/// chunk latency after the model server sent its first event).
async fn stream_once(client: &mut Client, chunks: usize) -> (f64, Duration) {
    let llm =
        MockLlm::start(vec![Step::text("x".repeat(chunks)).with_chunk_size(1)]).expect("mock llm");
    let id = session(client, &llm).await;
    let mut stream = client
        .stream_generate(ask(&id))
        .await
        .expect("stream")
        .into_inner();
    let mut first = None;
    let mut count = 0usize;
    while let Some(chunk) = stream.message().await.expect("chunk") {
        match chunk.r#type.as_str() {
            "content" => {
                first.get_or_insert_with(Instant::now);
                count += 1;
            }
            "done" => break,
            _ => {}
        }
    }
    let end = Instant::now();
    let first = first.expect("no content chunk");
    let sent = llm.requests()[0]
        .first_event_at
        .expect("the model server streamed nothing");
    let rate = count as f64 / end.duration_since(first).as_secs_f64();
    (rate, first.duration_since(sent))
}

/// 10 model rounds: 9 tool calls, then the answer.
fn ten_rounds() -> Vec<Step> {
    let mut steps: Vec<Step> = (0..9)
        .map(|_| Step::tool_call("read_file", json!({"path": "notes.txt"})))
        .collect();
    steps.push(Step::text("I read it nine times."));
    steps
}

fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let chunks = env_or("BENCH_CHUNKS", 100_000);
    let sessions = env_or("BENCH_SESSIONS", 100);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let scratch = tempfile::tempdir().expect("tempdir");
    let (mut server, addr) = serve(scratch.path());
    runtime.block_on(async {
        let mut client = Client::connect(format!("http://{addr}"))
            .await
            .expect("connect");
        // Warm-up: connections, the first session, the first turn.
        stream_once(&mut client, 1_000).await;
        let mut rates: Vec<f64> = Vec::new();
        for _ in 0..3 {
            rates.push(stream_once(&mut client, chunks).await.0);
        }
        rates.sort_by(f64::total_cmp);
        // Latency from short answers: with a long one the mock's own HTTP
        // write buffering would be measured too.
        let mut latencies: Vec<Duration> = Vec::new();
        for _ in 0..20 {
            latencies.push(stream_once(&mut client, 8).await.1);
        }
        latencies.sort();
        println!(
            "StreamGenerate: {chunks} one-character chunks, median {:.0} chunks/s (of 3 runs); first chunk median {:.2} ms, max {:.2} ms after the model's first token (20 runs)",
            rates[1],
            latencies[10].as_secs_f64() * 1000.0,
            latencies[19].as_secs_f64() * 1000.0,
        );

        let llms: Vec<MockLlm> = (0..sessions)
            .map(|_| MockLlm::start(ten_rounds()).expect("mock llm"))
            .collect();
        let mut ids = Vec::with_capacity(sessions);
        for llm in &llms {
            ids.push(session(&mut client, llm).await);
        }
        let start = Instant::now();
        let turns: Vec<_> = ids
            .iter()
            .map(|id| {
                let mut client = client.clone();
                let request = ask(id);
                tokio::spawn(async move { client.generate(request).await })
            })
            .collect();
        for turn in turns {
            let answer = turn.await.expect("task").expect("generate").into_inner();
            assert_eq!(answer.tool_calls.len(), 9);
        }
        let total = start.elapsed();
        println!(
            "{sessions} concurrent sessions x 10-round turn: {:.0} ms total; server peak RSS {:.1} MiB",
            total.as_secs_f64() * 1000.0,
            peak_rss_kib(server.id()) as f64 / 1024.0
        );
    });
    let _ = server.kill();
    let _ = server.wait();
}

//! Memory a destroyed session leaves behind, on a real `gantry serve`
//! process over loopback: N A3S sessions (5,000 by default) are created,
//! each asked once for (`GetSession`), destroyed, and asked for again (a
//! read of a destroyed session must not load it back); the server's RSS is
//! read at the start (after one warm-up session), at the peak, right after
//! the last destroy, and after a settling time (60 s by default).
//!
//! Run: `cargo bench -p gantry-cli --bench a3s_sessions`
//! (`BENCH_SESSIONS=N`, `BENCH_SETTLE_SECS=N`, `BENCH_CONCURRENCY=N`, 8).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use proto_code_agent::pb;
use proto_code_agent::pb::code_agent_service_client::CodeAgentServiceClient;
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
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

/// A line of `/proc/PID/status` in MiB (`VmRSS`, `VmHWM`).
fn status_mib(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// One session's life: created (with its own model server's address and
/// key, as A3S clients create them), read, destroyed, read again.
async fn churn(client: &mut Client, n: usize) {
    let config = pb::SessionConfig {
        name: format!("bench {n}"),
        llm: Some(pb::LlmConfig {
            provider: "openai".into(),
            model: "bench-model".into(),
            api_key: format!("key-{n}"),
            base_url: "http://127.0.0.1:9/v1".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let id = client
        .create_session(pb::CreateSessionRequest {
            config: Some(config),
            ..Default::default()
        })
        .await
        .expect("create session")
        .into_inner()
        .session_id;
    let get = || pb::GetSessionRequest {
        session_id: id.clone(),
    };
    client.get_session(get()).await.expect("get session");
    client
        .destroy_session(pb::DestroySessionRequest {
            session_id: id.clone(),
        })
        .await
        .expect("destroy session");
    let gone = client.get_session(get()).await;
    assert!(
        gone.is_err_and(|s| s.code() == tonic::Code::NotFound),
        "a destroyed session is still there"
    );
}

fn main() {
    let sessions = env_or("BENCH_SESSIONS", 5_000);
    let settle = Duration::from_secs(env_or("BENCH_SETTLE_SECS", 60) as u64);
    let concurrency = env_or("BENCH_CONCURRENCY", 8).max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let scratch = tempfile::tempdir().expect("tempdir");
    let (mut server, addr) = serve(scratch.path());
    let pid = server.id();
    runtime.block_on(async {
        let client = Client::connect(format!("http://{addr}"))
            .await
            .expect("connect");
        churn(&mut client.clone(), 0).await;
        let start = status_mib(pid, "VmRSS:");
        let began = Instant::now();
        let workers: Vec<_> = (0..concurrency)
            .map(|w| {
                let mut client = client.clone();
                tokio::spawn(async move {
                    for n in (w..sessions).step_by(concurrency) {
                        churn(&mut client, n + 1).await;
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.await.expect("worker");
        }
        let took = began.elapsed();
        let done = status_mib(pid, "VmRSS:");
        let peak = status_mib(pid, "VmHWM:");
        tokio::time::sleep(settle).await;
        let after = status_mib(pid, "VmRSS:");
        println!(
            "{sessions} A3S sessions created, read, destroyed and read again ({concurrency} at a time, {:.1} s): \
             RSS {start:.1} MiB at the start, peak {peak:.1} MiB, {done:.1} MiB after the last, \
             {after:.1} MiB {} s later ({:+.1} MiB over the start)",
            took.as_secs_f64(),
            settle.as_secs(),
            after - start,
        );
    });
    let _ = server.kill();
    let _ = server.wait();
}

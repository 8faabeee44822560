//! Pando over ZeroMQ on a real `gantry serve --pando DIR` process (SQLite
//! file store) over loopback, the scripted model with zero delay, a
//! pure-Rust `zeromq` client:
//! 1. `instance.ping` round trips, one after another on one DEALER;
//! 2. `llm.token` PUB messages per second to one SUB: one turn whose answer
//!    streams one character per model event, each an `llm.token`.
//!
//! Run: `cargo bench -p gantry-cli --bench pando_zmq`
//! (`BENCH_PINGS=N`, 20000 by default; `BENCH_CHUNKS=N`, 100000 by default).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use gantry_testkit::{MockLlm, Script, Step};
use serde_json::{Value, json};
use zeromq::{DealerSocket, Socket, SocketRecv, SocketSend, SubSocket, ZmqMessage};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `gantry serve --pando` whose default model is `llm`; the child and its
/// instance's (rpc, pub) ports.
fn serve(scratch: &std::path::Path, llm: &MockLlm) -> (Child, u16, u16) {
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
        .args(["serve", "--listen-addr", "127.0.0.1:0", "--data-dir"])
        .arg(scratch.join("data"))
        .args(["--pando-heartbeat-ms", "100", "--pando"])
        .arg(&ws)
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
    let port = |line: &str, key: &str| -> u16 {
        let at = line.find(key).expect("a port") + key.len();
        let digits: String = line[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().expect("a port number")
    };
    let (rpc, publ) = loop {
        let line = lines
            .next()
            .expect("gantry serve said nothing")
            .expect("stderr");
        if line.contains("serving Pando instance") {
            break (
                port(&line, "rpc tcp://127.0.0.1:"),
                port(&line, "pub tcp://127.0.0.1:"),
            );
        }
    };
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    (child, rpc, publ)
}

async fn call(dealer: &mut DealerSocket, id: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let msg =
        ZmqMessage::try_from(vec![Bytes::new(), Bytes::from(body.to_string())]).expect("frames");
    dealer.send(msg).await.expect("send");
    let reply = dealer.recv().await.expect("reply");
    let frames = reply.into_vec();
    serde_json::from_slice(frames.last().expect("a frame")).expect("reply JSON")
}

/// The topic of a PUB message's one frame.
fn topic(msg: &ZmqMessage) -> &[u8] {
    let frame = msg.get(0).expect("a frame");
    let nul = frame.iter().position(|b| *b == 0).unwrap_or(frame.len());
    &frame[..nul]
}

fn main() {
    let pings = env_or("BENCH_PINGS", 20_000);
    let chunks = env_or("BENCH_CHUNKS", 100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let scratch = tempfile::tempdir().expect("scratch");
        let text = "x".repeat(chunks);
        let steps = [Step::text(text).with_chunk_size(1)];
        let llm = MockLlm::start(Script::new(steps)).expect("mock model");
        let (mut server, rpc, publ) = serve(scratch.path(), &llm);
        let mut dealer = DealerSocket::new();
        dealer
            .connect(&format!("tcp://127.0.0.1:{rpc}"))
            .await
            .expect("DEALER");

        // 1. Ping round trips.
        let mut times = Vec::with_capacity(pings);
        let all = Instant::now();
        for i in 0..pings {
            let start = Instant::now();
            let reply = call(&mut dealer, &i.to_string(), "instance.ping", Value::Null).await;
            assert_eq!(reply["result"]["status"], "ok", "{reply}");
            times.push(start.elapsed());
        }
        let total = all.elapsed();
        times.sort();
        let pct = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
        println!(
            "instance.ping: {pings} round trips in {:.2} s: {:.0}/s, p50 {:.3} ms, p99 {:.3} ms",
            total.as_secs_f64(),
            pings as f64 / total.as_secs_f64(),
            pct(0.50).as_secs_f64() * 1e3,
            pct(0.99).as_secs_f64() * 1e3,
        );

        // 2. llm.token to one subscriber.
        let mut sub = SubSocket::new();
        sub.connect(&format!("tcp://127.0.0.1:{publ}"))
            .await
            .expect("SUB");
        sub.subscribe("").await.expect("subscribe");
        // Subscribed once a heartbeat arrives.
        while topic(&sub.recv().await.expect("PUB")) != b"instance.heartbeat" {}
        let reply = call(
            &mut dealer,
            "send",
            "message.send",
            json!({"session_id": "bench", "content": "stream"}),
        )
        .await;
        assert_eq!(reply["result"]["ok"], true, "{reply}");
        let mut tokens = 0usize;
        let mut first = None;
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(120), sub.recv())
                .await
                .expect("a PUB message in time")
                .expect("PUB");
            match topic(&msg) {
                b"llm.token" => {
                    first.get_or_insert_with(Instant::now);
                    tokens += 1;
                }
                b"llm.end" => break,
                _ => {}
            }
        }
        let elapsed = first.map_or(Duration::ZERO, |f| f.elapsed());
        println!(
            "llm.token: {tokens} of {chunks} messages in {:.2} s: {:.0}/s to one subscriber",
            elapsed.as_secs_f64(),
            tokens as f64 / elapsed.as_secs_f64().max(1e-9),
        );
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(server.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = server.wait();
    });
}

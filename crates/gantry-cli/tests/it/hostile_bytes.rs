//! A bounded fuzz run of every listener's decoder, against the real
//! daemon: a valid request of each protocol (an HTTP/1.1 call to the HTTP
//! API, CodeWhale and Rome; an HTTP/2 cleartext call to each of them and a
//! gRPC call to A3S; a ZMTP greeting, handshake and message to Pando),
//! mutated at random from a fixed seed (bytes flipped, inserted, cut, a
//! length set to its maximum), and random bytes, each on a connection of
//! its own. After them the daemon is the same process, it said nothing of a
//! panic, and every listener answers a valid request. The stdio adapters
//! (ACP, CodeWhale's) get mutated lines, lines that are not UTF-8 and a
//! line past the longest message, and answer the next request.
//!
//! `GANTRY_FUZZ_CASES` sets the cases per listener (default 200).

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::Scratch;

/// A small deterministic generator (xorshift64*): the same cases each run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// `seed` changed in one to four places; one case in ten is random bytes.
fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    if rng.below(10) == 0 {
        let n = rng.below(512);
        return rng.bytes(n);
    }
    let mut case = seed.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(case.len());
        match rng.below(6) {
            0 => {
                if let Some(b) = case.get_mut(at) {
                    *b ^= 1 << rng.below(8);
                }
            }
            // Where lengths live, the extremes matter most.
            1 => {
                let extreme = [0x00, 0x7F, 0x80, 0xFF][rng.below(4)];
                for b in case.iter_mut().skip(at).take(1 + rng.below(8)) {
                    *b = extreme;
                }
            }
            2 => {
                let n = 1 + rng.below(16);
                let insert = rng.bytes(n);
                case.splice(at..at, insert);
            }
            3 => {
                let end = (at + 1 + rng.below(32)).min(case.len());
                case.drain(at..end);
            }
            4 => {
                let end = (at + 1 + rng.below(64)).min(case.len());
                let copy = case[at..end].to_vec();
                case.splice(at..at, copy);
            }
            _ => case.truncate(at),
        }
    }
    case
}

/// An HTTP/1.1 POST of `body` to `path`.
fn http1(path: &str, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// An HTTP/2 frame.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).expect("small");
    let mut f = len.to_be_bytes()[1..].to_vec();
    f.extend([kind, flags]);
    f.extend(stream.to_be_bytes());
    f.extend(payload);
    f
}

/// HTTP/2 cleartext with prior knowledge: the preface, SETTINGS, then a
/// POST of `body` to `path` (headers as HPACK literals, never indexed).
fn h2c(path: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut headers = Vec::new();
    for (name, value) in [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "127.0.0.1"),
        ("content-type", content_type),
        ("te", "trailers"),
    ] {
        headers.push(0x00);
        headers.push(u8::try_from(name.len()).expect("short"));
        headers.extend(name.as_bytes());
        headers.push(u8::try_from(value.len()).expect("short"));
        headers.extend(value.as_bytes());
    }
    let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    bytes.extend(frame(0x4, 0, 0, &[]));
    bytes.extend(frame(0x1, 0x4, 1, &headers));
    bytes.extend(frame(0x0, 0x1, 1, body));
    bytes
}

/// A gRPC call of `method` with an empty message.
fn grpc(method: &str) -> Vec<u8> {
    h2c(method, "application/grpc", &[0, 0, 0, 0, 0])
}

/// A ZMTP 3.0 DEALER's greeting, READY, and a two-frame message (empty
/// delimiter, then a JSON-RPC ping).
fn zmtp() -> Vec<u8> {
    let mut bytes = vec![0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, 0];
    bytes.extend(b"NULL");
    bytes.extend([0; 16]);
    bytes.push(0); // as-server
    bytes.extend([0; 31]);
    let mut ready = vec![5];
    ready.extend(b"READY");
    ready.push(11);
    ready.extend(b"Socket-Type");
    ready.extend(6u32.to_be_bytes());
    ready.extend(b"DEALER");
    bytes.extend([0x04, u8::try_from(ready.len()).expect("short")]);
    bytes.extend(ready);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "instance.ping"}).to_string();
    bytes.extend([0x01, 0]);
    bytes.extend([0x00, u8::try_from(body.len()).expect("short")]);
    bytes.extend(body.as_bytes());
    bytes
}

/// Sends `case` on a connection of its own, then reads what comes back
/// until the server closes or a short while passes.
fn send(name: &str, addr: &str, case: &[u8]) {
    let Ok(mut tcp) = TcpStream::connect(addr) else {
        panic!("{name} ({addr}) refused a connection: the listener is gone");
    };
    let _ = tcp.set_read_timeout(Some(Duration::from_millis(500)));
    // The server may close first, refusing what it read: not a failure.
    let _ = tcp.write_all(case);
    let _ = tcp.shutdown(std::net::Shutdown::Write);
    let mut sink = [0u8; 4096];
    while matches!(tcp.read(&mut sink), Ok(n) if n > 0) {}
}

/// `gantry serve` with every listener on a free loopback port, and what
/// it says on stderr from then on.
struct Daemon {
    child: Child,
    said: Vec<String>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn daemon(s: &Scratch) -> Daemon {
    let workspace = s.dir.path().join("ws");
    std::fs::create_dir_all(&workspace).expect("workspace");
    let mut cmd = s.gantry();
    cmd.args(["serve", "--listen-addr", "127.0.0.1:0"])
        .args(["--storage-backend", "memory"])
        .args(["--http-addr", "127.0.0.1:0"])
        .args(["--codewhale-addr", "127.0.0.1:0"])
        .args(["--codewhale10-addr", "127.0.0.1:0"])
        .args(["--rome-addr", "127.0.0.1:0"])
        .arg("--pando")
        .arg(&workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn gantry serve");
    let stderr = child.stderr.take().expect("stderr");
    let prefixes = [
        "gantry: serving a3s.code.agent.v1.CodeAgentService on ",
        "gantry: serving the HTTP API and dashboard on http://",
        "gantry: serving CodeWhale HTTP on ",
        "gantry: serving CodeWhale 0.10 HTTP on ",
        "gantry: serving the Rome agent runner on ",
        "gantry: serving Pando instance ",
    ];
    let mut lines = std::io::BufReader::new(stderr).lines();
    let mut said: Vec<Option<String>> = vec![None; prefixes.len()];
    while said.iter().any(Option::is_none) {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("gantry serve ended before serving everything"))
            .expect("stderr");
        for (prefix, slot) in prefixes.iter().zip(&mut said) {
            if let Some(rest) = line.strip_prefix(prefix) {
                *slot = Some(rest.trim_end_matches('/').to_owned());
            }
        }
    }
    let kept = Arc::new(Mutex::new(Vec::new()));
    let keep = kept.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            keep.lock().expect("lock").push(line);
        }
    });
    let mut said: Vec<String> = said.into_iter().flatten().collect();
    // "… (rpc tcp://127.0.0.1:PORT, pub tcp://…)": the ROUTER's address.
    let pando = said[5].clone();
    let rpc = pando
        .split("rpc tcp://")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .expect("the Pando rpc address");
    said[5] = rpc.to_owned();
    Daemon {
        child,
        said,
        stderr: kept,
    }
}

fn cases() -> usize {
    std::env::var("GANTRY_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200)
}

/// The answer to a valid HTTP/1.1 request, as text.
fn http_get(addr: &str, path: &str) -> String {
    let mut tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        tcp,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut answer = String::new();
    let _ = tcp.read_to_string(&mut answer);
    answer
}

#[test]
fn every_listener_survives_mutated_and_random_bytes_and_answers_after() {
    let s = Scratch::new();
    let mut d = daemon(&s);
    let [a3s, http, codewhale, codewhale10, rome, pando] =
        [0, 1, 2, 3, 4, 5].map(|i| d.said[i].clone());
    let seeds: Vec<(&str, &String, Vec<u8>)> = vec![
        (
            "A3S gRPC",
            &a3s,
            grpc("/a3s.code.agent.v1.CodeAgentService/HealthCheck"),
        ),
        (
            "A3S gRPC health",
            &a3s,
            grpc("/grpc.health.v1.Health/Check"),
        ),
        (
            "HTTP API",
            &http,
            http1("/v1/threads", &json!({"title": "t"})),
        ),
        (
            "HTTP API h2c",
            &http,
            h2c("/v1/threads", "application/json", b"{}"),
        ),
        (
            "CodeWhale",
            &codewhale,
            http1("/thread", &json!({"op": "list"})),
        ),
        (
            "CodeWhale h2c",
            &codewhale,
            h2c("/app", "application/json", b"{}"),
        ),
        (
            "CodeWhale 0.10",
            &codewhale10,
            http1("/thread", &json!({"kind": "start", "operation_key": "k"})),
        ),
        (
            "Rome",
            &rome,
            http1("/v1/rome/run", &json!({"agent": "a", "input": "hi"})),
        ),
        ("Pando", &pando, zmtp()),
    ];
    let cases = cases();
    // One thread per seed: the listeners take their cases side by side.
    std::thread::scope(|scope| {
        for (i, (name, addr, seed)) in seeds.iter().enumerate() {
            scope.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1));
                for n in 0..cases {
                    let case = if n == 0 {
                        seed.clone()
                    } else {
                        mutate(seed, &mut rng)
                    };
                    send(name, addr, &case);
                }
            });
        }
    });

    assert!(
        d.child.try_wait().expect("wait").is_none(),
        "gantry serve died under the fuzz run; it said: {:?}",
        d.stderr.lock().expect("lock")
    );
    // Every listener still answers.
    let answer = http_get(&http, "/v1/threads");
    assert!(answer.starts_with("HTTP/1.1 200"), "HTTP API: {answer}");
    let answer = http_get(&codewhale, "/healthz");
    assert!(answer.starts_with("HTTP/1.1 200"), "CodeWhale: {answer}");
    let answer = http_get(&codewhale10, "/healthz");
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "CodeWhale 0.10: {answer}"
    );
    let answer = http_get(&rome, "/healthz");
    assert!(answer.starts_with("HTTP/1.1 200"), "Rome: {answer}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let channel = tonic::transport::Channel::from_shared(format!("http://{a3s}"))
            .expect("uri")
            .connect()
            .await
            .expect("A3S connects");
        let serving = tonic_health::pb::health_client::HealthClient::new(channel)
            .check(tonic_health::pb::HealthCheckRequest {
                service: "a3s.code.agent.v1.CodeAgentService".into(),
            })
            .await
            .expect("A3S answers its health check")
            .into_inner();
        assert_eq!(
            serving.status(),
            tonic_health::pb::health_check_response::ServingStatus::Serving
        );
        use zeromq::{Socket, SocketRecv, SocketSend};
        let mut dealer = zeromq::DealerSocket::new();
        dealer
            .connect(&format!("tcp://{pando}"))
            .await
            .expect("Pando connects");
        let body = json!({"jsonrpc": "2.0", "id": "after", "method": "instance.ping"});
        let msg = zeromq::ZmqMessage::try_from(vec![
            bytes::Bytes::new(),
            bytes::Bytes::from(body.to_string()),
        ])
        .expect("frames");
        dealer.send(msg).await.expect("send");
        let reply = tokio::time::timeout(Duration::from_secs(30), dealer.recv())
            .await
            .expect("Pando answers in time")
            .expect("reply");
        let frames = reply.into_vec();
        let reply: Value = serde_json::from_slice(frames.last().expect("a frame")).expect("JSON");
        assert_eq!(reply["result"]["status"], "ok", "Pando: {reply}");
    });
    let said = d.stderr.lock().expect("lock").join("\n");
    assert!(!said.contains("panicked"), "gantry serve panicked: {said}");
}

/// A stdio adapter (`args`) given mutated lines of `valid`, lines that are
/// not UTF-8 and a line past the longest message: it answers the parse
/// errors and then `valid` again, as the same process.
fn stdio_survives(args: &[&str], valid: &Value, answered: impl Fn(&Value) -> bool) {
    let s = Scratch::new();
    let mut child = s
        .gantry()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let said = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::BufReader::new(stderr).read_to_string(&mut text);
        text
    });
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Ok(v) = serde_json::from_str(&line)
                && tx.send(v).is_err()
            {
                return;
            }
        }
    });
    let writer = std::thread::spawn({
        let valid = valid.to_string();
        move || {
            let mut rng = Rng(0xD1B5_4A32_D192_ED03);
            let mut input = Vec::new();
            for _ in 0..cases() {
                let mut line = mutate(valid.as_bytes(), &mut rng);
                line.retain(|b| *b != b'\n');
                input.extend(line);
                input.push(b'\n');
            }
            input.extend(b"\xff\xfe not UTF-8\n");
            stdin.write_all(&input).expect("write");
            // One line past the longest message, sent in pieces.
            let chunk = vec![b'x'; 1 << 20];
            for _ in 0..=gantry_types::MAX_MESSAGE_BODY >> 20 {
                stdin.write_all(&chunk).expect("a long line");
            }
            stdin.write_all(b"\n").expect("its end");
            writeln!(stdin, "{valid}").expect("the valid request");
            stdin
        }
    });
    let mut too_long = false;
    loop {
        let message = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{args:?} stopped answering"));
        if message["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("longer than the largest message"))
        {
            assert_eq!(message["error"]["code"], -32700, "{message}");
            too_long = true;
        }
        if too_long && answered(&message) {
            break;
        }
    }
    let stdin = writer.join().expect("writer");
    drop(stdin);
    let status = child.wait().expect("wait");
    let said = said.join().expect("stderr");
    assert!(status.success(), "{args:?} ended {status:?}: {said}");
    assert!(!said.contains("panicked"), "{args:?} panicked: {said}");
}

#[test]
fn acp_over_stdio_survives_hostile_lines() {
    let valid = json!({"jsonrpc": "2.0", "id": "last", "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.json");
    let model = format!("scripted:{demo}");
    stdio_survives(&["acp", "--model", &model], &valid, |m| {
        m["id"] == "last" && m["result"]["protocolVersion"].is_number()
    });
}

#[test]
fn codewhale_over_stdio_survives_hostile_lines() {
    let valid = json!({"jsonrpc": "2.0", "id": "last", "method": "thread/list", "params": {}});
    for protocol in ["0.8.59", "0.10.2"] {
        stdio_survives(
            &["codewhale", "--stdio", "--protocol", protocol],
            &valid,
            |m| m["id"] == "last" && !m["result"].is_null(),
        );
    }
}

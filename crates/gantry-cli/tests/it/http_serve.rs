//! `gantry serve --http-addr`: the HTTP API of a real server. A client
//! following a thread over SSE through a `kill -9` mid-answer resumes on
//! the restarted server with `Last-Event-ID`: nothing missed, nothing twice.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use futures_util::StreamExt;
use gantry_testkit::{MockLlm, Script, Step};
use serde_json::{Value, json};

use crate::common::Scratch;

/// A running `gantry serve` and the address of its HTTP API.
struct Served {
    child: Child,
    http: String,
    _lines: Receiver<String>,
}

fn serve(s: &Scratch) -> Served {
    let mut child = s
        .gantry()
        .env("XDG_CONFIG_HOME", s.dir.path().join("xdg"))
        .env("MOCK_KEY", "sk-mock-0123456789")
        .args([
            "serve",
            "--listen-addr",
            "127.0.0.1:0",
            "--http-addr",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn gantry serve");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let http = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("gantry serve announces the HTTP API");
        if let Some(rest) =
            line.strip_prefix("gantry: serving the HTTP API and dashboard on http://")
        {
            break rest.trim_end_matches('/').to_owned();
        }
    };
    Served {
        child,
        http,
        _lines: rx,
    }
}

/// One SSE event: its id, type and data.
type Sse = (String, String, Value);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_client_resumes_after_the_server_is_killed_mid_answer() {
    let s = Scratch::new();
    // A slow answer: the kill lands in its middle.
    let answer = "one two three four five six seven eight nine ten eleven twelve";
    let llm = MockLlm::start(Script::new(vec![
        Step::text(answer).with_chunk_size(4).with_delay_ms(150),
    ]))
    .expect("mock llm");
    let dir = s.dir.path().join("xdg/gantry");
    std::fs::create_dir_all(&dir).expect("config dir");
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "default_model = \"mock/gpt-4.1\"\n[providers.mock]\nkind = \"openai-chat\"\n\
             base_url = \"{}\"\napi_key_env = \"MOCK_KEY\"\n",
            llm.base_url()
        ),
    )
    .expect("config");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let web = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");

    let mut first = serve(&s);
    let made: Value = web
        .post(format!("http://{}/v1/threads", first.http))
        .json(&json!({}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("JSON");
    let id = made["id"].as_str().expect("id").to_owned();
    let resp = web
        .post(format!("http://{}/v1/threads/{id}/messages", first.http))
        .json(&json!({"text": "count"}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 202);

    let mut seen: Vec<Sse> = Vec::new();
    {
        let resp = web
            .get(format!("http://{}/v1/threads/{id}/events", first.http))
            .send()
            .await
            .expect("events");
        let mut events = eventsource_stream::EventStream::new(resp.bytes_stream());
        while seen.iter().filter(|e| e.1 == "delta").count() < 3 {
            let e = tokio::time::timeout(Duration::from_secs(30), events.next())
                .await
                .expect("an event in time")
                .expect("open")
                .expect("event");
            seen.push((e.id, e.event, serde_json::from_str(&e.data).expect("JSON")));
        }
    }
    first.child.kill().expect("kill -9");
    first.child.wait().expect("reap");

    let mut second = serve(&s);
    let last = seen.last().expect("events").0.clone();
    let resp = web
        .get(format!("http://{}/v1/threads/{id}/events", second.http))
        .header("last-event-id", &last)
        .send()
        .await
        .expect("resume");
    let mut events = eventsource_stream::EventStream::new(resp.bytes_stream());
    let mut rest: Vec<Sse> = Vec::new();
    while !rest.iter().any(|e| e.1 == "turn_completed") {
        let e = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .expect("an event in time")
            .expect("open")
            .expect("event");
        rest.push((e.id, e.event, serde_json::from_str(&e.data).expect("JSON")));
    }
    let ended = rest.last().expect("turn_completed");
    assert_eq!(ended.2["payload"]["status"], "interrupted", "{rest:?}");
    // Every seq once, in order, across the two servers.
    let seqs: Vec<u64> = seen
        .iter()
        .chain(&rest)
        .filter(|e| e.1 != "delta")
        .map(|e| e.0.parse().expect("seq"))
        .collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "{seen:?} {rest:?}"
    );
    // No text twice: what was streamed is a prefix of the answer.
    let streamed: String = seen
        .iter()
        .chain(&rest)
        .filter(|e| e.1 == "delta")
        .map(|e| e.2["text"].as_str().unwrap_or_default())
        .collect();
    assert!(
        answer.starts_with(&streamed) && !streamed.is_empty(),
        "{streamed:?}"
    );

    let pid = nix::unistd::Pid::from_raw(i32::try_from(second.child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let status = tokio::task::spawn_blocking(move || second.child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert!(status.success(), "{status:?}");
}

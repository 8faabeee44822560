//! Over real HTTP: MCP servers' startup, which belongs to no thread,
//! streams at `GET /events` and resumes after `Last-Event-ID`; the turns a
//! message or a prompt starts keep the request's `traceparent`.

use futures_util::StreamExt;
use gantry_testkit::Step;
use gantry_types::ThreadId;
use gantry_types::mcp::{McpServerConfig, McpTransport};
use proto_codewhale::wire::{ThreadRequest, ThreadStartParams};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{HANG_GUARD, Setup, start};

/// `(id, data)` of each SSE event until one whose data holds `until`.
async fn sse_until(url: &str, last_event_id: Option<&str>, until: &str) -> Vec<(String, String)> {
    // reqwest is built without a crypto provider (plain HTTP here anyway).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut request = reqwest::Client::new().get(url);
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id);
    }
    let response = request.send().await.expect("GET /events");
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut events = Vec::new();
    let read = async {
        while let Some(chunk) = body.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk.expect("body")));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .unwrap_or_default()
                        .to_owned()
                };
                let data = field("data: ");
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                let done = data.contains(until);
                events.push((field("id: "), data));
                if done {
                    return;
                }
            }
        }
        panic!("the stream ended before `{until}`");
    };
    tokio::time::timeout(HANG_GUARD, read)
        .await
        .unwrap_or_else(|_| panic!("no `{until}` came"));
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_startup_streams_over_http_and_resumes_after_the_last_id() {
    let s = start(vec![]).await;
    let engine = s.cw.engine().clone();
    let server = McpServerConfig::new(
        "broken",
        McpTransport::Stdio {
            command: s.dir.path().join("no-such-server").display().to_string(),
            args: Vec::new(),
            env: Default::default(),
            cwd: None,
        },
    );
    engine.mcp().add_server(server).await.expect("add server");
    let summary = engine.mcp().start_servers().await;
    assert_eq!(summary.failed.len(), 1, "{summary:?}");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/events", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let served = tokio::spawn(proto_codewhale::serve_http(
        s.cw.clone(),
        proto_codewhale::Version::V0_8,
        listener,
        None,
        Vec::new(),
        stop.clone(),
    ));

    // Started before the client came: the kept events replay.
    let seen = sse_until(&url, None, "mcp_startup_complete").await;
    let update = seen
        .iter()
        .find(|(_, data)| data.contains("mcp_startup_update") && data.contains("failed"))
        .unwrap_or_else(|| panic!("the failed server's update: {seen:?}"));
    assert!(update.1.contains("broken"), "{update:?}");
    let (complete_id, complete) = seen.last().expect("complete");
    assert!(
        complete.contains("broken"),
        "the summary names it: {complete}"
    );
    assert!(
        complete_id.parse::<u64>().is_ok(),
        "id is the seq: {complete_id}"
    );

    // Resumed after the update: the summary comes, the update does not.
    let resumed = sse_until(&url, Some(&update.0), "mcp_startup_complete").await;
    assert!(
        !resumed.iter().any(|(id, _)| id == &update.0),
        "nothing twice: {resumed:?}"
    );
    assert_eq!(resumed.last().map(|(id, _)| id), Some(complete_id));

    stop.cancel();
    served.await.unwrap().unwrap();
}

/// A `traceparent` as a platform sends it, and as the turn keeps it.
const TRACEPARENT: &str = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01";
const KEPT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// An all-zero span id: not a `traceparent` the W3C allows.
const MALFORMED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";

/// Serves `cw` speaking `version` on an ephemeral port: its base URL, and
/// the token that stops it.
async fn serve(
    cw: &proto_codewhale::CodeWhale,
    version: proto_codewhale::Version,
) -> (String, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    tokio::spawn(proto_codewhale::serve_http(
        cw.clone(),
        version,
        listener,
        None,
        Vec::new(),
        stop.clone(),
    ));
    (base, stop)
}

/// POSTs `body` to `url` with `traceparent`; the JSON answer.
async fn post_traced(url: &str, traceparent: &str, body: &Value) -> Value {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let response = reqwest::Client::new()
        .post(url)
        .header("traceparent", traceparent)
        .json(body)
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 200);
    response.json().await.expect("JSON")
}

/// The `trace_parent` of each of `thread`'s turns, oldest first, once
/// every one has ended.
async fn trace_parents(s: &Setup, thread: &ThreadId) -> Vec<Option<String>> {
    let engine = s.cw.engine();
    let view = engine.threads().read(thread).await.expect("read");
    let mut kept = Vec::new();
    for turn in &view.turns {
        let ended = tokio::time::timeout(HANG_GUARD, engine.turns().wait(thread, &turn.turn.id))
            .await
            .expect("the turn ends")
            .expect("wait");
        kept.push(ended.trace_parent);
    }
    kept
}

async fn new_thread(s: &Setup) -> ThreadId {
    let started =
        s.cw.thread_request(ThreadRequest::Start(ThreadStartParams::default()))
            .await
            .expect("start");
    ThreadId(started.thread_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seeds_turns_keep_the_requests_traceparent_when_well_formed() {
    let s = start((0..4).map(|_| Step::text("ok")).collect()).await;
    let (base, stop) = serve(&s.cw, proto_codewhale::Version::V0_8).await;
    let thread = new_thread(&s).await;
    for traceparent in [TRACEPARENT, MALFORMED] {
        let message = json!({"kind": "message", "thread_id": thread.0, "input": "hi"});
        let answer = post_traced(&format!("{base}/thread"), traceparent, &message).await;
        assert_eq!(answer["status"], "accepted", "{answer}");
        // Queued after the message's turn, if it still runs.
        let prompt = json!({"thread_id": thread.0, "prompt": "hi"});
        let answer = post_traced(&format!("{base}/prompt"), traceparent, &prompt).await;
        assert_eq!(answer["output"], "ok", "{answer}");
    }
    let kept = Some(KEPT.to_owned());
    assert_eq!(
        trace_parents(&s, &thread).await,
        [kept.clone(), kept, None, None]
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_0_10s_turns_keep_the_requests_traceparent_when_well_formed() {
    let s = start((0..4).map(|_| Step::text("ok")).collect()).await;
    let (base, stop) = serve(&s.cw, proto_codewhale::Version::V0_10).await;
    let thread = new_thread(&s).await;
    for traceparent in [TRACEPARENT, MALFORMED] {
        let message = json!({"kind": "message", "thread_id": thread.0, "input": "hi"});
        let answer = post_traced(&format!("{base}/thread"), traceparent, &message).await;
        assert_eq!(answer["status"], "completed", "{answer}");
        let prompt = json!({"thread_id": thread.0, "prompt": "hi", "allowed_tools": []});
        let answer = post_traced(&format!("{base}/prompt"), traceparent, &prompt).await;
        assert_eq!(answer["output"], "ok", "{answer}");
    }
    let kept = Some(KEPT.to_owned());
    assert_eq!(
        trace_parents(&s, &thread).await,
        [kept.clone(), kept, None, None]
    );
    stop.cancel();
}

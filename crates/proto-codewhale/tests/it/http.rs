//! Over real HTTP: MCP servers' startup, which belongs to no thread,
//! streams at `GET /events` and resumes after `Last-Event-ID`.

use futures_util::StreamExt;
use gantry_types::mcp::{McpServerConfig, McpTransport};
use tokio_util::sync::CancellationToken;

use crate::common::{HANG_GUARD, start};

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

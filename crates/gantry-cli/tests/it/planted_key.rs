//! A session's own API key (A3S `LLMConfig.api_key`) reaches no client:
//! planted at creation, it is looked for in everything every listener of
//! `gantry serve` shows of the thread (A3S sessions, the HTTP API's thread,
//! listing and both event streams, CodeWhale's thread and listing), live
//! and after a restart, when the events are replayed from the store.

use proto_code_agent::pb;
use proto_code_agent::pb::code_agent_service_client::CodeAgentServiceClient;
use serde_json::json;

use crate::common::{Scratch, spawn_announcing};

const KEY: &str = "sk-planted-0123456789abcdef";

/// `gantry serve` on the scratch data dir: its A3S, HTTP API and CodeWhale
/// addresses.
fn serve(s: &Scratch) -> (std::process::Child, Vec<String>) {
    let mut cmd = s.gantry();
    cmd.args(["serve", "--listen-addr", "127.0.0.1:0"])
        .args(["--http-addr", "127.0.0.1:0"])
        .args(["--codewhale-addr", "127.0.0.1:0"]);
    let (child, mut said) = spawn_announcing(
        cmd,
        &[
            "gantry: serving a3s.code.agent.v1.CodeAgentService on ",
            "gantry: serving the HTTP API and dashboard on http://",
            "gantry: serving CodeWhale HTTP on ",
        ],
    );
    said[1] = said[1].trim_end_matches('/').to_owned();
    (child, said)
}

/// An SSE stream's text up to and including the first event of `kind`.
async fn sse_until(web: &reqwest::Client, url: &str, kind: &str) -> String {
    let mut response = web.get(url).send().await.expect("GET events");
    assert!(
        response.status().is_success(),
        "{url}: {}",
        response.status()
    );
    let mut text = String::new();
    let marker = format!("event: {kind}\n");
    // One deadline for the whole read: keep-alive comments never stop.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let chunk = tokio::time::timeout_at(deadline, response.chunk())
            .await
            .unwrap_or_else(|_| panic!("{url}: no {kind} event in {text}"))
            .expect("read")
            .expect("the stream goes on");
        text.push_str(&String::from_utf8_lossy(&chunk));
        // The event's data follows its type; a blank line ends it.
        if let Some(at) = text.find(&marker)
            && text[at..].contains("\n\n")
        {
            return text;
        }
    }
}

/// Everything the listeners show of `session`.
async fn everything_shown(addrs: &[String], session: &str) -> String {
    let mut shown = String::new();
    let mut a3s = CodeAgentServiceClient::connect(format!("http://{}", addrs[0]))
        .await
        .expect("connect");
    let got = a3s
        .get_session(pb::GetSessionRequest {
            session_id: session.to_owned(),
        })
        .await
        .expect("GetSession");
    shown.push_str(&format!("{:?}", got.into_inner()));
    let listed = a3s
        .list_sessions(pb::ListSessionsRequest {})
        .await
        .expect("ListSessions");
    shown.push_str(&format!("{:?}", listed.into_inner()));

    let _ = rustls::crypto::ring::default_provider().install_default();
    let web = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let http = &addrs[1];
    for path in [format!("/v1/threads/{session}"), "/v1/threads".to_owned()] {
        let text = web
            .get(format!("http://{http}{path}"))
            .send()
            .await
            .expect("GET")
            .text()
            .await
            .expect("body");
        assert!(text.contains(session), "{path}: {text}");
        shown.push_str(&text);
    }
    // Both from the start: the thread's log, and every thread's.
    for path in [
        format!("/v1/threads/{session}/events"),
        "/v1/events?after=0".to_owned(),
    ] {
        let url = format!("http://{http}{path}");
        shown.push_str(&sse_until(&web, &url, "thread_created").await);
    }
    for request in [
        json!({"kind": "read", "thread_id": session}),
        json!({"kind": "list"}),
    ] {
        let text = web
            .post(format!("http://{}/thread", addrs[2]))
            .json(&request)
            .send()
            .await
            .expect("POST /thread")
            .text()
            .await
            .expect("body");
        shown.push_str(&text);
    }
    shown
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_key_reaches_no_client_live_or_replayed() {
    let s = Scratch::new();
    let (mut child, addrs) = serve(&s);
    let mut a3s = CodeAgentServiceClient::connect(format!("http://{}", addrs[0]))
        .await
        .expect("connect");
    let session = a3s
        .create_session(pb::CreateSessionRequest {
            config: Some(pb::SessionConfig {
                name: "keyed".into(),
                llm: Some(pb::LlmConfig {
                    provider: "openai".into(),
                    model: "gpt-4.1".into(),
                    api_key: KEY.into(),
                    base_url: "http://127.0.0.1:9/v1".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .expect("CreateSession")
        .into_inner()
        .session_id;
    drop(a3s);

    let live = everything_shown(&addrs, &session).await;
    assert!(!live.contains(KEY), "the key is shown live: {live}");
    assert!(live.contains("thread_created"), "{live}");

    child.kill().expect("stop");
    child.wait().expect("reap");
    let (mut child, addrs) = serve(&s);
    let replayed = everything_shown(&addrs, &session).await;
    assert!(
        !replayed.contains(KEY),
        "the key is shown after a restart: {replayed}"
    );
    child.kill().expect("stop");
    child.wait().expect("reap");
}

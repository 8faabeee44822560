//! A session's own API key (A3S `LLMConfig.api_key`) reaches no client:
//! planted at creation, it is looked for in everything every listener of
//! `gantry serve` shows of the thread (A3S sessions, the HTTP API's thread,
//! listing and both event streams, CodeWhale's thread and listing, Pando's
//! session and listing), live and after a restart, when the events are
//! replayed from the store; nor in what `gantry acp` lists and replays of
//! it (`session/list`, `session/load`).

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
        .args(["--codewhale-addr", "127.0.0.1:0"])
        .arg("--pando")
        .arg(s.workspace());
    let (child, mut said) = spawn_announcing(
        cmd,
        &[
            "gantry: serving a3s.code.agent.v1.CodeAgentService on ",
            "gantry: serving the HTTP API and dashboard on http://",
            "gantry: serving CodeWhale HTTP on ",
            "gantry: serving Pando instance ",
        ],
    );
    said[1] = said[1].trim_end_matches('/').to_owned();
    said[3] = said[3]
        .split("(rpc ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .expect("the Pando rpc address")
        .to_owned();
    (child, said)
}

/// Pando's answers to `session.get` of `session` and `session.list`.
async fn pando_shown(rpc: &str, session: &str) -> String {
    use zeromq::{Socket, SocketRecv, SocketSend};
    let mut dealer = zeromq::DealerSocket::new();
    dealer.connect(rpc).await.expect("Pando connects");
    let mut shown = String::new();
    for (id, method) in [("get", "session.get"), ("list", "session.list")] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": method,
            "params": {"session_id": session}});
        let msg = zeromq::ZmqMessage::try_from(vec![
            bytes::Bytes::new(),
            bytes::Bytes::from(call.to_string()),
        ])
        .expect("frames");
        dealer.send(msg).await.expect("send");
        let reply = dealer.recv().await.expect("a reply").into_vec();
        let reply = String::from_utf8_lossy(reply.last().expect("a frame")).into_owned();
        assert!(reply.contains(session), "{method}: {reply}");
        shown.push_str(&reply);
    }
    shown
}

/// What `gantry acp` (over the same data dir, the daemon stopped) shows of
/// `session`: its listing and its history replayed by `session/load`.
fn acp_shown(s: &Scratch, session: &str) -> String {
    use std::io::Write;
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.json");
    let mut acp = s
        .gantry()
        .args(["acp", "--model", &format!("scripted:{demo}")])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gantry acp");
    let cwd = s.workspace().display().to_string();
    let mut stdin = acp.stdin.take().expect("stdin");
    for call in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/load",
            "params": {"sessionId": session, "cwd": cwd, "mcpServers": []}}),
    ] {
        writeln!(stdin, "{call}").expect("write");
    }
    drop(stdin);
    let out = acp.wait_with_output().expect("gantry acp");
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(shown.contains(session), "{shown}");
    assert!(
        shown.contains(r#""id":3,"jsonrpc":"2.0","result""#),
        "{shown}"
    );
    shown
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
    shown.push_str(&pando_shown(&addrs[3], session).await);
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
                // Pando's workspace: its sessions are that directory's.
                workspace: s.workspace().display().to_string(),
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
    let acp = acp_shown(&s, &session);
    assert!(!acp.contains(KEY), "the key is shown over ACP: {acp}");
}

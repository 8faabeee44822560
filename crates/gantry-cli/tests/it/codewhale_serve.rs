//! `gantry serve --codewhale-addr`: CodeWhale over HTTP beside the A3S
//! gRPC listener on one engine. A thread created over either protocol is
//! one thread of the other, and a stop ends both listeners.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use proto_code_agent::pb;
use proto_code_agent::pb::code_agent_service_client::CodeAgentServiceClient;
use serde_json::{Value, json};

use crate::common::Scratch;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_made_over_one_protocol_is_a_thread_of_the_other() {
    let scratch = Scratch::new();
    let mut child = scratch
        .gantry()
        .args([
            "serve",
            "--listen-addr",
            "127.0.0.1:0",
            "--storage-backend",
            "memory",
        ])
        .args(["--codewhale-addr", "127.0.0.1:0"])
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
    let (mut grpc, mut http) = (None, None);
    while grpc.is_none() || http.is_none() {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("gantry serve announces both addresses");
        if let Some(a) = line.strip_prefix("gantry: serving a3s.code.agent.v1.CodeAgentService on ")
        {
            grpc = Some(a.to_owned());
        }
        if let Some(a) = line.strip_prefix("gantry: serving CodeWhale HTTP on ") {
            http = Some(a.to_owned());
        }
    }
    let (grpc, http) = (grpc.expect("grpc"), http.expect("http"));
    // reqwest builds a rustls config even for plain HTTP.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let web = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let thread = |body: Value| {
        let web = web.clone();
        let url = format!("http://{http}/thread");
        async move {
            let answer: Value = web
                .post(url)
                .json(&body)
                .send()
                .await
                .expect("POST /thread")
                .json()
                .await
                .expect("JSON");
            answer
        }
    };
    let mut a3s = CodeAgentServiceClient::connect(format!("http://{grpc}"))
        .await
        .expect("connect");

    let made = thread(json!({"kind": "create"})).await;
    assert_eq!(made["status"], "created");
    let id = made["thread_id"].as_str().expect("id").to_owned();
    let sessions = a3s
        .list_sessions(pb::ListSessionsRequest {})
        .await
        .expect("ListSessions")
        .into_inner()
        .sessions;
    assert!(sessions.iter().any(|s| s.session_id == id), "{sessions:?}");

    let session = a3s
        .create_session(pb::CreateSessionRequest {
            config: Some(pb::SessionConfig {
                name: "from a3s".into(),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .expect("CreateSession")
        .into_inner()
        .session_id;
    let read = thread(json!({"kind": "read", "thread_id": session})).await;
    assert_eq!(read["thread"]["id"], session.as_str());
    assert_eq!(read["thread"]["name"], "from a3s");

    // One stop for both listeners: the process exits cleanly.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    drop(a3s);
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert!(status.success(), "{status:?}");
    // Up to the end of stderr, which the exit closes.
    let said: Vec<String> = rx.iter().collect();
    assert!(said.iter().any(|l| l == "gantry: stopped"), "{said:?}");
}

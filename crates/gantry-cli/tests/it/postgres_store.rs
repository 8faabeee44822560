//! `gantry serve` on a PostgreSQL store (a fresh database): a turn runs
//! with the scripted model, the server stops and starts again, and the
//! history is all there; `gantry exec` and `gantry threads` use the same
//! store. Nothing of it lands in the data dir's SQLite file.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

use gantry_testkit::postgres::TestDatabase;
use gantry_testkit::{MockLlm, Script, Step};
use proto_code_agent::pb;
use proto_code_agent::pb::code_agent_service_client::CodeAgentServiceClient;
use serde_json::Value;
use tonic::transport::Channel;

use crate::common::{Scratch, stderr};

/// A `gantry serve` on the store the config names, and its gRPC client.
async fn serve(scratch: &Scratch, extra: &[&str]) -> (Child, CodeAgentServiceClient<Channel>) {
    let mut child = scratch
        .gantry()
        .args(["serve", "--listen-addr", "127.0.0.1:0"])
        .args(extra)
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
    let mut said = Vec::new();
    let addr = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("gantry serve announces its address: {said:?}"));
        if let Some(a) = line.strip_prefix("gantry: serving a3s.code.agent.v1.CodeAgentService on ")
        {
            break a.to_owned();
        }
        said.push(line);
    };
    let client = CodeAgentServiceClient::connect(format!("http://{addr}"))
        .await
        .expect("connect");
    (child, client)
}

/// SIGTERM, then the exit status.
async fn stop(child: Child) -> std::process::ExitStatus {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let mut child = child;
    tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait")
}

/// A session's messages as (role, text).
async fn history(client: &mut CodeAgentServiceClient<Channel>, id: &str) -> Vec<(String, String)> {
    let messages = client
        .get_messages(pb::GetMessagesRequest {
            session_id: id.to_owned(),
            ..Default::default()
        })
        .await
        .expect("GetMessages")
        .into_inner()
        .messages;
    messages
        .into_iter()
        .map(|m| {
            let text = m
                .content
                .iter()
                .filter_map(|b| match &b.block {
                    Some(pb::content_block::Block::Text(t)) => Some(t.text.clone()),
                    _ => None,
                })
                .collect::<String>();
            (m.role, text)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_postgres_keeps_history_across_a_restart() {
    let Some(db) = TestDatabase::create().await else {
        return;
    };
    let scratch = Scratch::new();
    let llm = MockLlm::start(Script::new(vec![
        Step::text("The build is green."),
        Step::text("Scripted from exec."),
    ]))
    .expect("mock model");
    let config = scratch.dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "store = \"{}\"\ndefault_model = \"mock/gpt-4.1\"\n[providers.mock]\nkind = \"openai-chat\"\nbase_url = \"{}\"\napi_key = \"sk-test\"\nmodels = [\"gpt-4.1\"]\n",
            db.url(),
            llm.base_url()
        ),
    )
    .expect("config");
    let config = config.to_string_lossy().into_owned();

    // First server: the store comes from the config file.
    let (child, mut client) = serve(&scratch, &["--config", &config]).await;
    let session = client
        .create_session(pb::CreateSessionRequest {
            config: Some(pb::SessionConfig {
                name: "on postgres".into(),
                workspace: scratch.workspace().to_string_lossy().into_owned(),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .expect("CreateSession")
        .into_inner()
        .session_id;
    let answer = client
        .generate(pb::GenerateRequest {
            session_id: session.clone(),
            messages: vec![pb::Message {
                role: "user".into(),
                content: "is the build green?".into(),
                ..Default::default()
            }],
        })
        .await
        .expect("Generate")
        .into_inner();
    assert_eq!(
        answer.message.expect("message").content,
        "The build is green."
    );
    let before = history(&mut client, &session).await;
    assert_eq!(
        before,
        [
            ("user".to_owned(), "is the build green?".to_owned()),
            ("assistant".to_owned(), "The build is green.".to_owned()),
        ]
    );
    drop(client);
    assert!(stop(child).await.success());

    // Second server: the same store named by --store; the history is intact.
    let (child, mut client) = serve(&scratch, &["--config", &config, "--store", &db.url()]).await;
    let sessions = client
        .list_sessions(pb::ListSessionsRequest {})
        .await
        .expect("ListSessions")
        .into_inner()
        .sessions;
    assert!(
        sessions.iter().any(|s| s.session_id == session),
        "{sessions:?}"
    );
    assert_eq!(history(&mut client, &session).await, before);
    drop(client);
    assert!(stop(child).await.success());

    // exec and threads on the same database.
    let exec = scratch.run(&["--config", &config, "exec", "--store", &db.url(), "go"]);
    assert!(exec.status.success(), "{}", stderr(&exec));
    let list = scratch.run(&["threads", "list", "--json", "--store", &db.url()]);
    assert!(list.status.success(), "{}", stderr(&list));
    let listed: Value = serde_json::from_slice(&list.stdout).expect("json");
    let ids: Vec<&str> = listed["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids.len(), 2, "{listed}");
    assert!(ids.contains(&session.as_str()), "{listed}");

    // Nothing went to the SQLite file. The key that seals API keys would be
    // made in the data dir, but only once one is sealed: none was here.
    let data = scratch.dir.path().join("data");
    assert!(!data.join("gantry.db").exists());
    assert!(!data.join("secret.key").exists());
}

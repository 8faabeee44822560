//! A client that offers `fs` serves the file tools: the agent reads the
//! editor's text and writes through the editor, never the disk; one that
//! offers terminals runs the commands, their output live.

use std::collections::BTreeMap;

use gantry_core::Notification;
use gantry_testkit::Step;
use gantry_types::{DeltaKind, ThreadId};
use proto_acp::ClientTools;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::common::{connect_with, no_requests, start_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_fs_serves_the_file_tools() {
    let tools = ClientTools::new();
    let s = start_with(
        vec![
            Step::tool_call(
                "edit_file",
                json!({"path": "a.txt", "old_string": "buffer", "new_string": "edited buffer"}),
            ),
            Step::text("Edited."),
        ],
        Some(tools.clone()),
    )
    .await;
    let ws = s.ws();
    std::fs::write(format!("{ws}/a.txt"), "disk\n").unwrap();
    let mut client = connect_with(&s.engine, Some(tools));
    let caps = json!({"fs": {"readTextFile": true, "writeTextFile": true}});
    client
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": caps}),
            no_requests,
        )
        .await;
    let created = client
        .call(
            "session/new",
            json!({"cwd": ws, "mcpServers": []}),
            no_requests,
        )
        .await;
    let session = created["result"]["sessionId"].clone();
    client
        .call(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "full-auto"}),
            no_requests,
        )
        .await;
    let mut asked: Vec<Value> = Vec::new();
    let done = client
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "edit"}]}),
            |req| {
                asked.push(req.clone());
                match req["method"].as_str() {
                    Some("fs/read_text_file") => json!({"content": "unsaved buffer\n"}),
                    _ => json!({}),
                }
            },
        )
        .await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let methods: Vec<&str> = asked.iter().filter_map(|r| r["method"].as_str()).collect();
    assert_eq!(methods, ["fs/read_text_file", "fs/write_text_file"]);
    assert_eq!(asked[0]["params"]["path"], format!("{ws}/a.txt"));
    assert_eq!(asked[1]["params"]["content"], "unsaved edited buffer\n");
    // The editor applies the edit: the disk is untouched.
    assert_eq!(
        std::fs::read_to_string(format!("{ws}/a.txt")).unwrap(),
        "disk\n"
    );
    let diff = client.updates("tool_call_update").pop().unwrap()["content"][0].clone();
    assert_eq!(diff["oldText"], "unsaved buffer");
    assert_eq!(diff["newText"], "unsaved edited buffer");
}

/// A client that offers terminals runs the shell's commands; what the
/// terminal prints reaches the engine's command output deltas while the
/// command still runs (other clients of the thread see it live), and the
/// variables sent with `terminal/create` carry no secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_output_streams_live_and_no_secret_reaches_the_client() {
    let tools = ClientTools::new();
    let s = start_with(
        vec![
            Step::tool_call("shell", json!({"command": "make build"})),
            Step::text("Built."),
        ],
        Some(tools.clone()),
    )
    .await;
    let env = [("BUILD_MODE", "fast"), ("NPM_TOKEN", "npm_secret")];
    s.engine
        .set_command_env(
            env.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
        )
        .unwrap();
    let ws = s.ws();
    let mut client = connect_with(&s.engine, Some(tools));
    client
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"terminal": true}}),
            no_requests,
        )
        .await;
    let created = client
        .call(
            "session/new",
            json!({"cwd": ws, "mcpServers": []}),
            no_requests,
        )
        .await;
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    client
        .call(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "full-auto"}),
            no_requests,
        )
        .await;
    // Another client of the thread: the engine's own feed.
    let mut feed = s
        .engine
        .feeds()
        .subscribe(&ThreadId(session.clone()), 1)
        .await
        .unwrap();
    let (tx, mut deltas) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(n) = feed.next().await {
            if let Notification::Delta(d) = n
                && let DeltaKind::CommandOutput(text) = &d.kind
                && tx.send(text.clone()).is_err()
            {
                return;
            }
        }
    });
    let prompt = client
        .start_call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "build"}]}),
        )
        .await;
    let mut output = "building...\n".to_owned();
    let mut waiting: Option<Value> = None;
    let mut exited = false;
    let mut create = Value::Null;
    let answer = loop {
        let msg = tokio::select! {
            msg = client.line() => msg,
            Some(live) = deltas.recv(), if waiting.is_some() && !exited => {
                // Seen by the engine's clients before the command ended.
                assert_eq!(live, "building...\n");
                output.push_str("done\n");
                exited = true;
                let wait = waiting.clone().unwrap_or_default();
                client.reply(&wait, json!({"exitCode": 0})).await;
                continue;
            }
        };
        let id = msg["id"].clone();
        match msg["method"].as_str() {
            Some("terminal/create") => {
                create = msg["params"].clone();
                client.reply(&id, json!({"terminalId": "term-1"})).await;
            }
            Some("terminal/wait_for_exit") => waiting = Some(id),
            Some("terminal/output") => {
                let status = if exited {
                    json!({"exitCode": 0})
                } else {
                    Value::Null
                };
                let result = json!({"output": output, "truncated": false, "exitStatus": status});
                client.reply(&id, result).await;
            }
            Some(_) if !id.is_null() => client.reply(&id, json!({})).await,
            None if id == json!(prompt) => break msg,
            _ => {}
        }
    };
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(exited, "the command ended after its output was seen live");
    let mut rest = Vec::new();
    while let Ok(text) = deltas.try_recv() {
        rest.push(text);
    }
    assert_eq!(rest, ["done\n"], "the rest of the output, once");
    let names: Vec<&str> = create["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert!(names.contains(&"BUILD_MODE"), "{create}");
    assert!(!create.to_string().contains("npm_secret"), "{create}");
    assert!(!create.to_string().contains("sk-test-secret"), "{create}");
}

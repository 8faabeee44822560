//! A client that offers `fs` serves the file tools: the agent reads the
//! editor's text and writes through the editor, never the disk.

use gantry_testkit::Step;
use proto_acp::ClientTools;
use serde_json::{Value, json};

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

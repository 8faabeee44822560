//! Checkpoints over the API: listed per turn, a rewind refused over
//! someone else's change and forced, a fork at one into a new directory.

use gantry_testkit::Step;
use serde_json::json;

use crate::common::{Server, assert_error, shell, start_with};

/// Sends `text` and waits for its turn to end.
async fn run_turn(s: &Server, id: &str, text: &str) {
    let mut events = s.events(&format!("/v1/threads/{id}/events"), None).await;
    let (status, sent) = s
        .post(&format!("/v1/threads/{id}/messages"), json!({"text": text}))
        .await;
    assert_eq!(status, 202, "{sent}");
    let turn = sent["turn_id"].as_str().expect("turn").to_owned();
    events
        .until(|e| e.event == "turn_completed" && e.data["payload"]["turn_id"] == turn.as_str())
        .await;
}

#[tokio::test]
async fn checkpoints_are_listed_rewound_to_and_forked_from() {
    let s = start_with(
        vec![
            shell("echo one > a.txt"),
            Step::text("One."),
            shell("echo two > a.txt && echo b > b.txt"),
            Step::text("Two."),
        ],
        true,
    )
    .await;
    let id = s.thread(json!({})).await;
    run_turn(&s, &id, "write one").await;
    run_turn(&s, &id, "write two").await;

    let (status, listed) = s.get(&format!("/v1/threads/{id}/checkpoints")).await;
    assert_eq!(status, 200, "{listed}");
    let checkpoints = listed["checkpoints"].as_array().expect("list");
    assert_eq!(checkpoints.len(), 2, "{listed}");
    assert_eq!(checkpoints[1]["files_changed"], json!(["a.txt"]));
    let second = checkpoints[1]["id"].as_str().expect("id").to_owned();
    let first = checkpoints[0]["id"].as_str().expect("id").to_owned();

    std::fs::write(s.workspace.join("notes.md"), "mine").expect("user's file");
    let refused = s
        .post(
            &format!("/v1/threads/{id}/rewind"),
            json!({"checkpoint": second}),
        )
        .await;
    assert_error(&refused, 409, "conflict");
    assert_eq!(refused.1["error"]["details"]["files"], json!(["notes.md"]));

    let (status, rewound) = s
        .post(
            &format!("/v1/threads/{id}/rewind"),
            json!({"checkpoint": second, "force": true}),
        )
        .await;
    assert_eq!(status, 200, "{rewound}");
    assert_eq!(
        std::fs::read_to_string(s.workspace.join("a.txt")).expect("a"),
        "one\n"
    );
    assert!(!s.workspace.join("b.txt").exists());
    assert_ne!(rewound["thread"]["id"], id.as_str());

    let (status, fork) = s
        .post(
            &format!("/v1/threads/{id}/fork"),
            json!({"checkpoint": first}),
        )
        .await;
    assert_eq!(status, 201, "{fork}");
    let fork_dir = std::path::PathBuf::from(fork["workspace"].as_str().expect("workspace"));
    assert!(fork_dir.is_dir());
    assert!(!fork_dir.join("a.txt").exists());

    assert_error(
        &s.post(
            &format!("/v1/threads/{id}/rewind"),
            json!({"checkpoint": "0".repeat(40)}),
        )
        .await,
        404,
        "not_found",
    );
    let (_, doc) = s.get("/openapi.json").await;
    assert!(doc["paths"]["/v1/threads/{id}/checkpoints"]["get"].is_object());
    assert!(doc["paths"]["/v1/threads/{id}/rewind"]["post"].is_object());
}

//! The agent loop against the scripted model over HTTP, with real tools.

use crate::common;

use common::*;
use gantry_core::EngineConfig;
use gantry_testkit::{Step, ToolCallSpec};
use gantry_types::{EventPayload, ItemKind, ItemStatus, TurnStatus};
use serde_json::json;

#[tokio::test]
async fn multi_round_turn_runs_tools_and_feeds_results_back() {
    let h = Harness::new(vec![
        Step::tool_call("shell", json!({"command": "echo one > a.txt && cat a.txt"}))
            .with_text("Writing a file."),
        Step::tool_call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
        ),
        Step::text("The file now says two."),
    ])
    .await;
    let (_, seen) = h.run_turn("make a.txt say two").await;

    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert_eq!(
        std::fs::read_to_string(h.workspace().join("a.txt")).unwrap(),
        "two\n"
    );
    let kinds: Vec<&str> = completed_kinds(&seen).iter().map(|k| k.name()).collect();
    assert_eq!(
        kinds,
        [
            "user_message",
            "agent_message",
            "command_execution",
            "file_change",
            "agent_message"
        ]
    );
    // Seqs are dense from the subscription point.
    let seqs: Vec<u64> = events(&seen).iter().map(|e| e.seq).collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "dense seqs: {seqs:?}"
    );

    // The model saw its own tool call and the command's result in round 2.
    let requests = h.llm.requests();
    assert_eq!(requests.len(), 3);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[0]["content"], "be brief");
    let tool_msg = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("tool result sent");
    assert!(
        tool_msg["content"].as_str().unwrap().contains("one"),
        "{tool_msg}"
    );
    // The built-ins, plus the thread's memory tools (`remember`, `recall`).
    assert_eq!(
        requests[0].body["tools"].as_array().unwrap().len(),
        h.engine.tool_specs().len() + 2
    );

    // Usage is recorded on the turn and the thread.
    let view = h.view().await;
    assert!(view.thread.usage.total() > 0);
    assert_eq!(view.turns[0].turn.rounds, 3);
}

#[tokio::test]
async fn parallel_tool_calls_are_all_run_and_all_answered() {
    let h = Harness::new(vec![
        Step::tool_calls(vec![
            ToolCallSpec::new("write_file", json!({"path": "x.txt", "content": "x"}))
                .with_id("call_x"),
            ToolCallSpec::new("write_file", json!({"path": "y.txt", "content": "y"}))
                .with_id("call_y"),
            ToolCallSpec::new("shell", json!({"command": "echo z"})).with_id("call_z"),
        ]),
        Step::text("done"),
    ])
    .await;
    let (_, seen) = h.run_turn("write x and y").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert!(h.workspace().join("x.txt").exists() && h.workspace().join("y.txt").exists());

    let requests = h.llm.requests();
    let messages = requests[1].body["messages"].as_array().unwrap();
    let answered: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        answered,
        ["call_x", "call_y", "call_z"],
        "every call answered, in call order"
    );
}

#[tokio::test]
async fn invalid_arguments_and_unknown_tools_are_answered_not_fatal() {
    let h = Harness::new(vec![
        Step::tool_calls(vec![
            ToolCallSpec::new("shell", json!("{\"command\": \"echo hi\"")).with_id("bad_json"),
            ToolCallSpec::new("teleport", json!({"to": "mars"})).with_id("unknown"),
            ToolCallSpec::new("read_file", json!({"path": 42})).with_id("wrong_type"),
        ]),
        Step::text("sorry"),
    ])
    .await;
    let (_, seen) = h.run_turn("do odd things").await;
    assert_eq!(
        turn_status(&seen),
        TurnStatus::Completed,
        "the turn goes on"
    );

    let failed: Vec<_> = events(&seen)
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ItemCompleted { item } if item.status == ItemStatus::Failed => {
                Some(item.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 3);
    let messages = h.llm.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let results: Vec<String> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert!(results[0].contains("not valid JSON"), "{}", results[0]);
    assert!(
        results[1].contains("unknown tool") && results[1].contains("shell"),
        "{}",
        results[1]
    );
    assert!(results[2].to_lowercase().contains("path"), "{}", results[2]);
}

#[tokio::test]
async fn max_rounds_stops_a_looping_model_with_a_clear_error() {
    let config = EngineConfig {
        max_rounds: 3,
        ..EngineConfig::default()
    };
    let steps = (0..5)
        .map(|_| Step::tool_call("shell", json!({"command": "true"})))
        .collect();
    let h = Harness::with_config(steps, config).await;
    let (_, seen) = h.run_turn("loop forever").await;
    assert_eq!(turn_status(&seen), TurnStatus::Failed);
    assert_eq!(h.llm.request_count(), 3);
    let last = completed_kinds(&seen)
        .into_iter()
        .rev()
        .find(|k| matches!(k, ItemKind::Error { .. }));
    match last {
        Some(ItemKind::Error { message }) => {
            assert!(message.contains("3 model rounds"), "{message}")
        }
        other => panic!("expected an error item, got {other:?}"),
    }
}

#[tokio::test]
async fn history_carries_across_turns() {
    let h = Harness::new(vec![
        Step::tool_call("shell", json!({"command": "echo remembered"})),
        Step::text("first answer"),
        Step::text("second answer"),
    ])
    .await;
    h.run_turn("first question").await;
    let (_, seen) = h.run_turn("second question").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let messages = h.llm.requests()[2].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(messages[4]["content"], "first answer");
    assert_eq!(messages[5]["content"], "second question");
}

#[tokio::test]
async fn every_model_failure_mode_fails_the_turn_cleanly_or_recovers() {
    // (steps, expected status, text the error item must contain)
    let cases: Vec<(Vec<Step>, TurnStatus, &str)> = vec![
        (
            vec![Step::http_error(401)],
            TurnStatus::Failed,
            "authentication failed (HTTP 401)",
        ),
        (vec![Step::http_error(403)], TurnStatus::Failed, "HTTP 403"),
        (
            vec![
                Step::http_error(429).with_retry_after(0.0),
                Step::text("after the limit"),
            ],
            TurnStatus::Completed,
            "",
        ),
        (
            vec![
                Step::http_error(500),
                Step::http_error(502),
                Step::text("third time"),
            ],
            TurnStatus::Completed,
            "",
        ),
        (
            vec![
                Step::http_error(500),
                Step::http_error(500),
                Step::http_error(500),
            ],
            TurnStatus::Failed,
            "model server error (HTTP 500)",
        ),
        (
            vec![Step::text("partial answer here").malformed_after(3)],
            TurnStatus::Failed,
            "malformed model stream",
        ),
        (
            vec![
                Step::text("partial answer here")
                    .with_chunk_size(3)
                    .cut_after(4),
            ],
            TurnStatus::Failed,
            "ended early",
        ),
    ];
    for (steps, status, message) in cases {
        let what = format!("{steps:?}");
        let h = Harness::new(steps).await;
        let (_, seen) = h.run_turn("hi").await;
        assert_eq!(turn_status(&seen), status, "{what}");
        let errors: Vec<String> = completed_kinds(&seen)
            .into_iter()
            .filter_map(|k| match k {
                ItemKind::Error { message } => Some(message),
                _ => None,
            })
            .collect();
        if status == TurnStatus::Failed {
            assert_eq!(errors.len(), 1, "{what}: {errors:?}");
            assert!(errors[0].contains(message), "{what}: {}", errors[0]);
        } else {
            assert!(errors.is_empty(), "{what}: {errors:?}");
        }
    }
}

#[tokio::test]
async fn text_streamed_before_a_cut_is_kept_in_the_failed_item() {
    let h = Harness::new(vec![
        Step::text("abcdefghijklmnop")
            .with_chunk_size(2)
            .cut_after(5),
    ])
    .await;
    let (_, seen) = h.run_turn("hi").await;
    assert_eq!(turn_status(&seen), TurnStatus::Failed);
    let view = h.view().await;
    let agent = view.turns[0]
        .items
        .iter()
        .find(|i| matches!(i.kind, ItemKind::AgentMessage { .. }))
        .expect("the partial answer is stored");
    assert_eq!(agent.status, ItemStatus::Failed);
    let ItemKind::AgentMessage { text } = &agent.kind else {
        unreachable!()
    };
    assert!(
        !text.is_empty() && "abcdefghijklmnop".starts_with(text.as_str()),
        "{text:?}"
    );
}

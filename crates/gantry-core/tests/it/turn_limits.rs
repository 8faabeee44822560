//! A message may narrow what its turn uses, without changing its thread:
//! the tools offered to the model (none at all, or some by name) and the
//! tokens of each answer. A message queued behind a running turn keeps its
//! own limits until its turn starts.

use crate::common;

use common::*;
use gantry_core::{IfBusy, UserInput};
use gantry_testkit::Step;
use gantry_types::TurnLimits;
use serde_json::Value;

/// The tool names a request offered the model.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn limited(text: &str, tools: Option<&[&str]>, max: Option<u32>) -> UserInput {
    UserInput {
        text: text.into(),
        limits: TurnLimits {
            allowed_tools: tools.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
            max_output_tokens: max,
        },
        ..UserInput::default()
    }
}

#[tokio::test]
async fn a_turn_offers_only_the_tools_and_tokens_its_message_allows() {
    let h = Harness::new(vec![
        Step::text("none"),
        Step::text("one"),
        Step::text("all"),
    ])
    .await;
    for input in [
        limited("no tools", Some(&[]), Some(77)),
        limited("read only", Some(&["read_file"]), None),
        UserInput::from("as the thread"),
    ] {
        let view = h.view().await;
        let mut sub = h
            .engine
            .feeds()
            .subscribe(&h.thread.id, view.thread.last_seq + 1)
            .await
            .expect("subscribe");
        let turn = h
            .engine
            .turns()
            .send_input(&h.thread.id, input, IfBusy::Reject)
            .await
            .expect("send");
        until_turn_ends(&mut sub, &turn).await;
    }
    let requests = h.llm.requests();
    assert_eq!(requests.len(), 3);
    assert!(offered(&requests[0].body).is_empty(), "no tools at all");
    assert_eq!(requests[0].body["max_tokens"], 77);
    assert_eq!(offered(&requests[1].body), ["read_file"]);
    assert!(requests[1].body.get("max_tokens").is_none());
    let all = offered(&requests[2].body);
    assert!(
        all.len() > 3 && all.iter().any(|t| t == "shell"),
        "the thread's own tools again: {all:?}"
    );
}

#[tokio::test]
async fn a_queued_message_keeps_its_limits_until_its_turn() {
    let h = Harness::new(vec![Step::text("first"), Step::text("second")]).await;
    // Paused, the first turn runs but asks nothing: the second message
    // is queued behind it for sure.
    h.engine.threads().pause(&h.thread.id).await.expect("pause");
    let (mut sub, first) = h.start_turn("first").await;
    let queued = h
        .engine
        .turns()
        .send_input(
            &h.thread.id,
            limited("second", Some(&[]), Some(9)),
            IfBusy::Queue,
        )
        .await
        .expect("queued");
    let view = h.view().await;
    assert_eq!(view.queued.len(), 1, "queued behind the running turn");
    assert_eq!(view.queued[0].limits.allowed_tools, Some(Vec::new()));
    h.engine
        .threads()
        .resume(&h.thread.id)
        .await
        .expect("resume");
    until_turn_ends(&mut sub, &first).await;
    until_turn_ends(&mut sub, &queued).await;
    let requests = h.llm.requests();
    assert_eq!(requests.len(), 2);
    assert!(!offered(&requests[0].body).is_empty());
    assert!(
        offered(&requests[1].body).is_empty(),
        "the queued turn's own limits"
    );
    assert_eq!(requests[1].body["max_tokens"], 9);
}

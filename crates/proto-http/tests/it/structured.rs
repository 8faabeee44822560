//! `POST /v1/threads/{id}/structured`: a JSON answer given as text is
//! accepted when it validates; an invalid one fails clearly once the
//! retries run out.

use gantry_testkit::Step;
use serde_json::{Value, json};

use crate::common::{assert_error, start};

fn person_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
        "required": ["name", "age"]
    })
}

#[tokio::test]
async fn a_json_text_answer_completes_a_structured_turn() {
    let s = start(vec![Step::text("{\"name\": \"Ada\", \"age\": 36}")]).await;
    let id = s.thread(json!({})).await;
    let (status, answer) = s
        .post(
            &format!("/v1/threads/{id}/structured"),
            json!({"prompt": "Who wrote the first program?", "schema": person_schema()}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["output"], json!({"name": "Ada", "age": 36}));
    // The turn is the thread's, with its output item.
    let (_, thread) = s.get(&format!("/v1/threads/{id}")).await;
    let turn = thread["turns"]
        .as_array()
        .and_then(|t| t.last())
        .expect("a turn");
    assert_eq!(turn["id"], answer["turn_id"], "{thread}");
    assert_eq!(turn["status"], "completed", "{thread}");
    assert!(
        turn["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|i| i["type"] == "structured_output"),
        "{turn}"
    );
}

#[tokio::test]
async fn an_invalid_json_text_answer_fails_after_the_retries() {
    let s = start(vec![
        Step::text("{\"name\": \"Ada\", \"age\": "),
        Step::text("{\"name\": \"Ada\", \"age\": -1}"),
    ])
    .await;
    let id = s.thread(json!({})).await;
    let got = s
        .post(
            &format!("/v1/threads/{id}/structured"),
            json!({"prompt": "who?", "schema": person_schema(), "retries": 1}),
        )
        .await;
    assert_error(&got, 422, "validation_failed");
    let message = got.1["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("2 submissions were rejected"), "{message}");
    assert!(message.contains("/age"), "{message}");
    let turn = got.1["error"]["details"]["turn_id"]
        .as_str()
        .expect("turn_id");
    let (_, thread) = s.get(&format!("/v1/threads/{id}")).await;
    let last = thread["turns"]
        .as_array()
        .and_then(|t| t.last())
        .expect("a turn");
    assert_eq!(
        (last["id"].as_str(), last["status"].as_str()),
        (Some(turn), Some("failed"))
    );
}

#[tokio::test]
async fn a_schema_that_is_not_one_is_refused_before_any_turn() {
    let s = start(vec![]).await;
    let id = s.thread(json!({})).await;
    let got = s
        .post(
            &format!("/v1/threads/{id}/structured"),
            json!({"prompt": "who?", "schema": "a person"}),
        )
        .await;
    assert_error(&got, 422, "validation_failed");
    assert_eq!(got.1["error"]["details"]["field"], "schema", "{}", got.1);
    let (_, thread) = s.get(&format!("/v1/threads/{id}")).await;
    assert_eq!(thread["turns"], json!([]), "{thread}");
}

#[tokio::test]
async fn a_structured_turn_keeps_the_requests_traceparent_when_well_formed() {
    let answer = "{\"name\": \"Ada\", \"age\": 36}";
    let s = start(vec![Step::text(answer), Step::text(answer)]).await;
    let id = s.thread(json!({})).await;
    let ask = json!({"prompt": "who?", "schema": person_schema()});
    let mut kept = Vec::new();
    for traceparent in [
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
    ] {
        let sent = s
            .http
            .post(s.url(&format!("/v1/threads/{id}/structured")))
            .header("traceparent", traceparent)
            .json(&ask)
            .send()
            .await
            .expect("send");
        assert_eq!(sent.status(), 200);
        let (_, thread) = s.get(&format!("/v1/threads/{id}")).await;
        let last = thread["turns"]
            .as_array()
            .and_then(|t| t.last())
            .cloned()
            .expect("a turn");
        kept.push(last["trace_parent"].clone());
    }
    assert_eq!(
        kept,
        [
            json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            // An all-zero span id: ignored, as the W3C says.
            Value::Null,
        ]
    );
}

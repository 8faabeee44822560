//! Questions the model asks the user, over the API: the pending request in
//! the thread's JSON and its events, answering it (bad answers named,
//! the first answer wins), and one nobody answers in time.

use gantry_testkit::Step;
use serde_json::{Value, json};

use crate::common::{Events, Server, assert_error, start};

/// One pick with free text, one multi-select.
pub(crate) fn ask() -> Step {
    Step::tool_call(
        "request_user_input",
        json!({"questions": [
            {"id": "db", "header": "Database", "question": "Which database should it use?",
             "options": [{"label": "PostgreSQL", "description": "a server"},
                         {"label": "SQLite", "description": "a file"}],
             "allow_free_text": true},
            {"id": "targets", "header": "Targets", "question": "Where must it run?",
             "options": [{"label": "Linux", "description": "servers"},
                         {"label": "macOS", "description": "laptops"}],
             "multi_select": true}
        ]}),
    )
}

/// Sends a message to `id` and waits until the model's questions are asked:
/// the events so far, and the request's id.
async fn asked(s: &Server, id: &str) -> (Events, String) {
    let mut events = s.events(&format!("/v1/threads/{id}/events"), None).await;
    let (status, sent) = s
        .post(
            &format!("/v1/threads/{id}/messages"),
            json!({"text": "set up the service"}),
        )
        .await;
    assert_eq!(status, 202, "{sent}");
    let seen = events
        .until(|e| e.event == "item_started" && e.data["payload"]["item"]["type"] == "user_input")
        .await;
    let item = &seen.last().unwrap().data["payload"]["item"];
    assert_eq!(item["questions"][0]["header"], "Database", "{item}");
    let request = item["request_id"].as_str().unwrap().to_owned();
    (events, request)
}

/// What the model was told by the last tool result of request `n`.
fn told(s: &Server, n: usize) -> Value {
    let body = &s.llm.requests()[n].body;
    let tool = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rfind(|m| m["role"] == "tool"))
        .cloned()
        .unwrap_or_default();
    serde_json::from_str(tool["content"].as_str().unwrap_or_default()).unwrap_or_default()
}

#[tokio::test]
async fn the_user_answers_over_the_api_and_the_turn_goes_on() {
    let s = start(vec![ask(), Step::text("SQLite on Linux, then.")]).await;
    let id = s.thread(json!({"approval": "on-request"})).await;
    let (mut events, request) = asked(&s, &id).await;
    let path = format!("/v1/threads/{id}/user-input/{request}");

    // A client that connects now finds it in the thread's JSON.
    let (_, thread) = s.get(&format!("/v1/threads/{id}")).await;
    let pending = &thread["pending_user_input"][0];
    assert_eq!(pending["request_id"], request.as_str(), "{thread}");
    assert_eq!(pending["state"], "pending");
    assert_eq!(pending["questions"][0]["options"][1]["label"], "SQLite");
    assert_eq!(pending["questions"][1]["multi_select"], true);
    assert_eq!(pending["timeout_ms"], 300_000, "the default wait");
    let (_, listed) = s.get(&format!("/v1/threads/{id}/user-input")).await;
    assert_eq!(listed[0]["state"], "pending");

    let bad = s
        .post(
            &path,
            json!({"answers": [{"id": "db", "selected": ["MySQL"]}]}),
        )
        .await;
    assert_error(&bad, 422, "validation_failed");
    assert!(
        bad.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`MySQL` is not an option"),
        "{}",
        bad.1
    );
    let malformed = s.post(&path, json!({"answers": [{"selected": []}]})).await;
    assert_error(&malformed, 422, "validation_failed");
    assert_error(
        &s.post(
            &format!("/v1/threads/{id}/user-input/nope"),
            json!({"answers": []}),
        )
        .await,
        404,
        "not_found",
    );

    let (status, answered) = s
        .post(
            &path,
            json!({"answers": [
                {"id": "targets", "selected": ["Linux"]},
                {"id": "db", "selected": ["SQLite"], "text": " with WAL "}
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["state"], "answered");
    assert_eq!(
        answered["answers"],
        json!([{"id": "db", "selected": ["SQLite"], "text": "with WAL"},
               {"id": "targets", "selected": ["Linux"]}]),
        "as recorded: in question order, trimmed"
    );
    let again = s
        .post(
            &path,
            json!({"answers": [{"id": "db", "selected": ["PostgreSQL"]}]}),
        )
        .await;
    assert_error(&again, 409, "conflict");

    events.until(|e| e.event == "turn_completed").await;
    let model = told(&s, 1);
    assert_eq!(model["status"], "answered", "{model}");
    assert_eq!(model["answers"][0]["text"], "with WAL");
    let (_, thread) = s.get(&format!("/v1/threads/{id}")).await;
    assert_eq!(thread["pending_user_input"], json!([]));
    let (_, listed) = s.get(&format!("/v1/threads/{id}/user-input")).await;
    assert_eq!(listed[0]["state"], "answered");
    assert_eq!(listed[0]["answers"][1]["selected"], json!(["Linux"]));
}

#[tokio::test]
async fn a_request_nobody_answers_times_out_and_the_model_is_told() {
    let s = start(vec![ask(), Step::text("I picked SQLite myself.")]).await;
    let id = s
        .thread(json!({"approval": "on-request", "user_input": {"timeout_ms": 600_000}}))
        .await;
    let (mut events, request) = asked(&s, &id).await;
    // Ten minutes, passed at once on tokio's paused clock.
    tokio::time::pause();
    tokio::time::advance(std::time::Duration::from_millis(600_001)).await;
    tokio::time::resume();
    let seen = events
        .until(|e| e.event == "item_completed" && e.data["payload"]["item"]["type"] == "user_input")
        .await;
    let item = &seen.last().unwrap().data["payload"]["item"];
    assert_eq!(item["resolved_by"], "timeout", "{item}");
    events.until(|e| e.event == "turn_completed").await;
    assert_eq!(told(&s, 1)["status"], "timed_out");
    let (_, listed) = s.get(&format!("/v1/threads/{id}/user-input")).await;
    assert_eq!(listed[0]["state"], "timed_out");
    let late = s
        .post(
            &format!("/v1/threads/{id}/user-input/{request}"),
            json!({"answers": [{"id": "db", "selected": ["SQLite"]}]}),
        )
        .await;
    assert_error(&late, 409, "conflict");
}

//! The model's questions to the user as `elicitation/create` forms: a
//! client that renders forms answers them, one that declines sends the
//! model on, and a client without elicitation is never offered the tool.

use gantry_testkit::Step;
use serde_json::{Value, json};

use crate::common::{Client, connect, no_requests, start};

fn ask() -> Step {
    Step::tool_call(
        "request_user_input",
        json!({"questions": [
            {"id": "db", "header": "Database", "question": "Which database?",
             "options": [{"label": "PostgreSQL", "description": "a server"},
                         {"label": "SQLite", "description": "a file"}],
             "allow_free_text": true},
            {"id": "targets", "header": "Targets", "question": "Where must it run?",
             "options": [{"label": "Linux", "description": ""}, {"label": "macOS", "description": ""}],
             "multi_select": true}
        ]}),
    )
}

async fn session(client: &mut Client, ws: &str, caps: Value) -> String {
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
    created["result"]["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned()
}

/// The tool result the model got in request `n`.
fn told(s: &crate::common::Setup, n: usize) -> Value {
    let body = &s.llm.requests()[n].body;
    let tool = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rfind(|m| m["role"] == "tool"))
        .cloned()
        .unwrap_or_default();
    serde_json::from_str(tool["content"].as_str().unwrap_or_default()).unwrap_or_default()
}

fn offered(s: &crate::common::Setup, n: usize) -> Vec<String> {
    s.llm.requests()[n].body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_asks_the_questions_and_the_answers_reach_the_model() {
    let s = start(vec![ask(), Step::text("SQLite on Linux it is.")]).await;
    let ws = s.ws();
    let mut client = connect(&s.engine);
    let id = session(&mut client, &ws, json!({"elicitation": {"form": {}}})).await;
    let mut asked = Vec::new();
    let answer = client
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "set it up"}]}),
            |req| {
                asked.push(req.clone());
                json!({"action": "accept", "content": {
                    "db": "SQLite", "db.other": "with WAL", "targets": ["Linux"]
                }})
            },
        )
        .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["method"], "elicitation/create");
    let params = &asked[0]["params"];
    assert_eq!(params["sessionId"], id.as_str());
    assert_eq!(params["mode"], "form");
    let call = client.updates("tool_call")[0].clone();
    assert_eq!(params["toolCallId"], call["toolCallId"], "tied to the call");
    assert_eq!(call["title"], "Ask: Database, Targets");
    let fields = &params["requestedSchema"]["properties"];
    assert_eq!(fields["db"]["oneOf"][0]["const"], "PostgreSQL");
    assert_eq!(fields["targets"]["type"], "array");
    assert_eq!(fields["db.other"]["type"], "string");

    assert!(offered(&s, 0).iter().any(|t| t == "request_user_input"));
    let model = told(&s, 1);
    assert_eq!(model["status"], "answered", "{model}");
    assert_eq!(model["answers"][0]["selected"], json!(["SQLite"]));
    assert_eq!(model["answers"][0]["text"], "with WAL");
    assert_eq!(model["answers"][1]["selected"], json!(["Linux"]));
    let last = client.updates("tool_call_update").pop().unwrap();
    assert_eq!(last["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_form_tells_the_model_the_user_answered_nothing() {
    let s = start(vec![ask(), Step::text("I will pick myself.")]).await;
    let ws = s.ws();
    let mut client = connect(&s.engine);
    let id = session(&mut client, &ws, json!({"elicitation": {"form": {}}})).await;
    let answer = client
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "set it up"}]}),
            |_| json!({"action": "decline"}),
        )
        .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(told(&s, 1)["status"], "declined");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_is_never_asked() {
    let s = start(vec![Step::text("Hello.")]).await;
    let ws = s.ws();
    let mut client = connect(&s.engine);
    let id = session(&mut client, &ws, json!({})).await;
    let answer = client
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}),
            no_requests,
        )
        .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(!offered(&s, 0).iter().any(|t| t == "request_user_input"));
}

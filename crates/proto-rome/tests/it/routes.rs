//! The routes as a client sees them: NDJSON streams, sessions by key,
//! refusals before any stream, interrupts, allowed tools, the token, the
//! caller's `traceparent`.

use gantry_testkit::{Step, ToolCallSpec};
use gantry_types::{ThreadId, TurnId, TurnStatus};
use proto_rome::AgentProfile;
use serde_json::{Value, json};

use crate::common::{Lines, allowing, start};

fn types(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m["type"].as_str().unwrap_or("?"))
        .collect()
}

#[tokio::test]
async fn a_run_is_an_ndjson_stream_bracketed_by_turn_start_and_turn_end() {
    let setup = start(
        vec![Step::text("first answer"), Step::text("second answer")],
        Default::default(),
        None,
    )
    .await;
    let run = json!({"agentName": "main", "prompt": "hello", "channelThreadKey": "slack:C1"});
    let response = setup.post("/v1/rome/run", &run, None).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/x-ndjson"
    );
    let first = Lines::new(response).rest().await;
    let kinds = types(&first);
    assert_eq!(kinds[..2], ["turn_start", "session_init"]);
    assert_eq!(kinds[kinds.len() - 2..], ["result", "turn_end"]);
    assert_eq!(first[kinds.len() - 2]["content"], "first answer");
    assert_eq!(first.last().unwrap()["status"], "completed");

    // The same key continues the session.
    let response = setup.post("/v1/rome/run", &run, None).await;
    let second = Lines::new(response).rest().await;
    assert_eq!(second[0]["sessionId"], first[0]["sessionId"]);
    let session = ThreadId(first[0]["sessionId"].as_str().unwrap().to_owned());
    let view = setup.engine.threads().read(&session).await.unwrap();
    assert_eq!(view.turns.len(), 2, "both runs are turns of one thread");
}

#[tokio::test]
async fn refusals_come_before_any_stream_as_json_errors() {
    let setup = start(
        vec![],
        [("reader".to_owned(), allowing(&["read_file"]))].into(),
        Some("tok"),
    )
    .await;
    let token = Some("tok");
    let cases = [
        (
            json!({"agentName": "nobody", "prompt": "hi"}),
            404,
            "agent `nobody` not found",
        ),
        (
            json!({"agentName": "main", "prompt": "  "}),
            400,
            "prompt: empty",
        ),
        (
            json!({"agentName": "main", "prompt": "hi", "workingDir": "/no/such/dir"}),
            400,
            "workingDir: `/no/such/dir` is not an existing directory",
        ),
        (
            json!({"agentName": "main", "prompt": "hi", "sessionId": "missing"}),
            404,
            "session `missing` not found",
        ),
    ];
    for (body, status, error) in cases {
        let response = setup.post("/v1/rome/run", &body, token).await;
        assert_eq!(response.status().as_u16(), status, "{body}");
        let answer: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(answer["error"], error, "{body}");
    }
    let fork = json!({"agentName": "main", "sourceSessionId": "missing", "prompt": "x", "channelThreadKey": "k"});
    assert_eq!(
        setup.post("/v1/rome/fork", &fork, token).await.status(),
        404
    );
    let run = json!({"agentName": "main", "prompt": "hi"});
    assert_eq!(setup.post("/v1/rome/run", &run, None).await.status(), 401);
    assert_eq!(
        setup
            .post("/v1/rome/run", &run, Some("wrong"))
            .await
            .status(),
        401
    );
    assert_eq!(setup.get("/healthz", None).await.0, 200);
    assert_eq!(setup.get("/v1/rome/agents/main", None).await.0, 401);
    assert_eq!(setup.get("/v1/rome/agents/main", token).await.0, 200);
    assert_eq!(setup.get("/v1/rome/agents/ghost", token).await.0, 404);
    let (_, allowed) = setup
        .get("/v1/rome/agents/reader/actions/Read", token)
        .await;
    assert_eq!(allowed, json!({"allowed": true}));
    let (_, allowed) = setup
        .get("/v1/rome/agents/reader/actions/shell", token)
        .await;
    assert_eq!(allowed, json!({"allowed": false}));
    let interrupt = setup
        .post(
            &format!("/v1/rome/turns/{}/interrupt", TurnId::new()),
            &json!({}),
            token,
        )
        .await;
    assert_eq!(interrupt.status(), 404);
}

#[tokio::test]
async fn a_client_that_goes_away_mid_turn_interrupts_it() {
    let slow = Step::Reply(gantry_testkit::Reply {
        text: "x".repeat(400),
        chunk_size: 1,
        delay_ms: 25,
        ..Default::default()
    });
    let setup = start(vec![slow], Default::default(), None).await;
    let run = json!({"agentName": "main", "prompt": "long"});
    let mut lines = Lines::new(setup.post("/v1/rome/run", &run, None).await);
    let start = lines.next().await.unwrap();
    while lines.next().await.unwrap()["type"] != "text_delta" {}
    drop(lines);
    let thread = ThreadId(start["sessionId"].as_str().unwrap().to_owned());
    let turn = TurnId(start["turnId"].as_str().unwrap().to_owned());
    let ended = tokio::time::timeout(
        crate::common::HANG_GUARD,
        setup.engine.turns().wait(&thread, &turn),
    )
    .await
    .expect("the turn ends")
    .unwrap();
    assert_eq!(ended.status, TurnStatus::Interrupted);
}

#[tokio::test]
async fn an_agent_calls_only_its_allowed_tools() {
    let steps = vec![
        Step::tool_calls(vec![ToolCallSpec::new(
            "shell",
            json!({"command": "echo no"}),
        )]),
        Step::text("could not"),
    ];
    let setup = start(
        steps,
        [("reader".to_owned(), allowing(&["read_file"]))].into(),
        None,
    )
    .await;
    let run = json!({"agentName": "reader", "prompt": "run echo"});
    let messages = Lines::new(setup.post("/v1/rome/run", &run, None).await)
        .rest()
        .await;
    let use_ = messages.iter().find(|m| m["type"] == "tool_use").unwrap();
    let result = messages
        .iter()
        .find(|m| m["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["toolUseId"], use_["id"]);
    let told = result["output"].as_str().unwrap_or_default().to_lowercase();
    assert!(
        told.contains("denied") || told.contains("not allowed"),
        "{told}"
    );
    assert_eq!(messages.last().unwrap()["status"], "completed");
}

#[tokio::test]
async fn runs_and_forks_keep_the_requests_traceparent_when_well_formed() {
    let reporter = AgentProfile {
        allowed_tools: None,
        output_schema: Some(json!({"type": "object"})),
    };
    let steps = vec![
        Step::text("first"),
        Step::text("second"),
        Step::text("forked"),
        Step::text("{\"ok\": true}"),
    ];
    let setup = start(steps, [("reporter".to_owned(), reporter)].into(), None).await;
    let traceparent = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01";
    let kept = Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned());
    // An all-zero span id: not a `traceparent` the W3C allows.
    let malformed = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
    // The turn a request's stream opened, once it has ended.
    let turn_of = |path: &'static str, body: Value, traceparent: &'static str| {
        let setup = &setup;
        async move {
            let response = setup.post_traced(path, &body, traceparent).await;
            assert_eq!(response.status(), 200, "{body}");
            let lines = Lines::new(response).rest().await;
            assert_eq!(lines.last().unwrap()["status"], "completed", "{lines:?}");
            let thread = ThreadId(lines[0]["sessionId"].as_str().unwrap().to_owned());
            let turn = TurnId(lines[0]["turnId"].as_str().unwrap().to_owned());
            let view = setup.engine.threads().read(&thread).await.unwrap();
            let found = view.turns.iter().find(|t| t.turn.id == turn).unwrap();
            (thread, found.turn.trace_parent.clone())
        }
    };
    let run = json!({"agentName": "main", "prompt": "hello", "channelThreadKey": "slack:C1"});
    let (session, first) = turn_of("/v1/rome/run", run.clone(), traceparent).await;
    assert_eq!(first, kept);
    let (_, second) = turn_of("/v1/rome/run", run, malformed).await;
    assert_eq!(second, None, "a malformed traceparent is ignored");
    let fork = json!({
        "agentName": "main", "sourceSessionId": session.0, "prompt": "again",
        "channelThreadKey": "slack:C1",
    });
    let (fork, forked) = turn_of("/v1/rome/fork", fork, traceparent).await;
    assert_ne!(fork, session);
    assert_eq!(forked, kept);
    // An agent with an output schema runs a structured turn.
    let report = json!({"agentName": "reporter", "prompt": "report"});
    let (_, structured) = turn_of("/v1/rome/run", report, traceparent).await;
    assert_eq!(structured, kept);
}

//! One connection's sessions: a prompt with an approval answered by the
//! user, the update stream, errors, and a second connection loading the
//! history.

use gantry_testkit::Step;
use gantry_types::ThreadId;
use serde_json::{Value, json};

use crate::common::{Client, connect, no_requests, start};

async fn new_session(client: &mut Client, cwd: &str) -> String {
    client
        .call("initialize", json!({"protocolVersion": 1}), no_requests)
        .await;
    let created = client
        .call(
            "session/new",
            json!({"cwd": cwd, "mcpServers": []}),
            no_requests,
        )
        .await;
    created["result"]["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asked_command_runs_once_allowed_and_its_updates_stream() {
    let s = start(vec![
        Step::tool_call(
            "shell",
            json!({"command": "echo ran > ran.txt; cat ran.txt"}),
        )
        .with_reasoning("Try it."),
        Step::text("Finished."),
    ])
    .await;
    let ws = s.ws();
    let mut client = connect(&s.engine);
    let session = new_session(&mut client, &ws).await;
    let mut asked = Vec::new();
    let answer = client
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
            |req| {
                asked.push(req.clone());
                let allow = req["params"]["options"]
                    .as_array()
                    .and_then(|o| o.iter().find(|o| o["kind"] == "allow_once"))
                    .map(|o| o["optionId"].clone())
                    .unwrap_or(Value::Null);
                json!({"outcome": {"outcome": "selected", "optionId": allow}})
            },
        )
        .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["method"], "session/request_permission");
    assert_eq!(asked[0]["params"]["toolCall"]["kind"], "execute");
    assert_eq!(
        std::fs::read_to_string(format!("{ws}/ran.txt")).unwrap(),
        "ran\n"
    );
    let calls = client.updates("tool_call");
    assert_eq!(calls.len(), 1, "announced once, as pending");
    assert_eq!(calls[0]["status"], "pending");
    let last = client.updates("tool_call_update").pop().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(last["content"][0]["content"]["text"], "ran\n");
    let said: String = client
        .updates("agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(said, "Finished.");
    assert_eq!(
        client.updates("agent_thought_chunk")[0]["content"]["type"],
        "text"
    );
    assert_eq!(client.updates("usage_update").len(), 1);
    // The session is a thread every other protocol sees.
    let view = s.engine.threads().read(&ThreadId(session)).await.unwrap();
    assert_eq!(view.thread.cwd, ws);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_what_was_wrong() {
    let s = start(vec![]).await;
    let mut client = connect(&s.engine);
    let ws = s.ws();
    let session = new_session(&mut client, &ws).await;
    let code = |v: Value| v["error"]["code"].as_i64();
    let unknown = client
        .call(
            "session/prompt",
            json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]}),
            no_requests,
        )
        .await;
    assert_eq!(code(unknown), Some(-32002));
    let method = client.call("session/fork", json!({}), no_requests).await;
    assert_eq!(code(method), Some(-32601));
    let params = client
        .call("session/new", json!({"cwd": "relative/dir"}), no_requests)
        .await;
    assert_eq!(code(params.clone()), Some(-32602), "{params}");
    let mode = client
        .call(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "yolo"}),
            no_requests,
        )
        .await;
    assert!(
        mode["error"]["message"]
            .as_str()
            .unwrap()
            .contains("accept-edits")
    );
    client
        .send(json!({"jsonrpc": "2.0", "method": "_x/y", "params": {}}))
        .await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 99, "result": {}}))
        .await;
    let list = client.call("session/list", json!({}), no_requests).await;
    assert_eq!(list["result"]["sessions"][0]["sessionId"], session.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_replays_the_history_before_it_answers() {
    let s = start(vec![
        Step::tool_call("write_file", json!({"path": "a.txt", "content": "hi\n"})),
        Step::text("Wrote it."),
    ])
    .await;
    let ws = s.ws();
    let mut first = connect(&s.engine);
    let session = new_session(&mut first, &ws).await;
    first
        .call(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "full-auto"}),
            no_requests,
        )
        .await;
    let done = first
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "write a"}]}),
            no_requests,
        )
        .await;
    assert_eq!(done["result"]["stopReason"], "end_turn");

    let mut second = connect(&s.engine);
    second
        .call("initialize", json!({"protocolVersion": 1}), no_requests)
        .await;
    let loaded = second
        .call(
            "session/load",
            json!({"sessionId": session, "cwd": ws, "mcpServers": []}),
            no_requests,
        )
        .await;
    assert_eq!(loaded["result"]["modes"]["currentModeId"], "full-auto");
    let kinds: Vec<Value> = second
        .seen
        .iter()
        .map(|m| m["params"]["update"]["sessionUpdate"].clone())
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ]
    );
    let diff = &second.updates("tool_call_update")[0]["content"][0];
    assert_eq!(diff["type"], "diff");
    assert_eq!(diff["oldText"], Value::Null);
    assert_eq!(diff["newText"], "hi");
    assert_eq!(diff["path"], format!("{ws}/a.txt"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_blocks_reach_the_model_as_images() {
    let s = start(vec![Step::text("A pixel.")]).await;
    let ws = s.ws();
    let mut client = connect(&s.engine);
    let init = client
        .call("initialize", json!({"protocolVersion": 1}), no_requests)
        .await;
    assert_eq!(
        init["result"]["agentCapabilities"]["promptCapabilities"]["image"],
        true
    );
    let session = new_session(&mut client, &ws).await;
    let prompt = json!([
        {"type": "text", "text": "what is this?"},
        {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
    ]);
    let answer = client
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": prompt}),
            no_requests,
        )
        .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let images = s.llm.requests()[0].images();
    assert_eq!(images.len(), 1);
    assert_eq!(
        (images[0].media_type.as_str(), images[0].data.as_str()),
        ("image/png", "iVBORw0KGgo=")
    );
    // A malformed image is a bad prompt, said before any turn starts.
    let bad = json!([{"type": "image", "mimeType": "image/png", "data": "not base64"}]);
    let refused = client
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": bad}),
            no_requests,
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("base64")),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_models_refusal_answers_stop_reason_refusal() {
    let refusal = Step::Reply(gantry_testkit::Reply {
        text: "I won't do that.".into(),
        finish_reason: Some("content_filter".into()),
        ..gantry_testkit::Reply::default()
    });
    let s = start(vec![refusal]).await;
    let ws = s.ws();
    let mut client = connect(&s.engine);
    let session = new_session(&mut client, &ws).await;
    let answer = client
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "do it"}]}),
            no_requests,
        )
        .await;
    assert_eq!(answer["result"]["stopReason"], "refusal", "{answer}");
    let said: Vec<Value> = client.updates("agent_message_chunk");
    let text: String = said
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(text, "I won't do that.");
}

#[tokio::test]
async fn a_line_that_is_not_utf8_is_answered_and_the_session_goes_on() {
    let setup = start(vec![]).await;
    let mut client = connect(&setup.engine);
    client
        .send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}\n")
        .await;
    let answer = client.line().await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");
    let init = client
        .call("initialize", json!({"protocolVersion": 1}), no_requests)
        .await;
    assert!(init.get("result").is_some(), "{init}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_structured_turn_replays_without_the_engines_internal_tool() {
    // Another protocol's structured answer on this session's thread: the
    // engine's submit tool is its own, never the agent's tool call.
    let s = start(vec![Step::tool_call(
        "submit_output",
        json!({"name": "Ada"}),
    )])
    .await;
    let ws = s.ws();
    let mut first = connect(&s.engine);
    let session = new_session(&mut first, &ws).await;
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}},
        "required": ["name"]});
    let output = s
        .engine
        .structured()
        .generate(
            &ThreadId(session.clone()),
            gantry_core::StructuredRequest::new("who?", schema),
        )
        .await
        .expect("structured output");
    assert_eq!(output.payload, json!({"name": "Ada"}));

    let mut second = connect(&s.engine);
    second
        .call("initialize", json!({"protocolVersion": 1}), no_requests)
        .await;
    second
        .call(
            "session/load",
            json!({"sessionId": session, "cwd": ws, "mcpServers": []}),
            no_requests,
        )
        .await;
    assert!(
        second.updates("tool_call").is_empty() && second.updates("tool_call_update").is_empty(),
        "{:?}",
        second.seen
    );
    let seen = serde_json::to_string(&second.seen).expect("JSON");
    assert!(!seen.contains("submit_output"), "{seen}");
    assert!(!second.updates("user_message_chunk").is_empty(), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_keeps_its_meta_traceparent_when_well_formed() {
    let s = start((0..4).map(|_| Step::text("ok")).collect()).await;
    let ws = s.ws();
    let mut client = connect(&s.engine);
    let session = new_session(&mut client, &ws).await;
    let kept = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let metas = [
        json!({"traceparent": "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"}),
        // An all-zero span id: not a `traceparent` the W3C allows.
        json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"}),
        json!({"traceparent": 7}),
        json!("not an object"),
    ];
    let mut seen = Vec::new();
    for meta in metas {
        let params = json!({
            "sessionId": session,
            "prompt": [{"type": "text", "text": "go"}],
            "_meta": meta,
        });
        let answer = client.call("session/prompt", params, no_requests).await;
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        let view = s
            .engine
            .threads()
            .read(&ThreadId(session.clone()))
            .await
            .expect("read");
        seen.push(view.turns.last().expect("a turn").turn.trace_parent.clone());
    }
    assert_eq!(seen, [Some(kept.to_owned()), None, None, None]);
}

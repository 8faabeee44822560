//! Generation over the wire: a whole turn, a streamed turn, structured
//! output, the session's own model server, cancel, pause, and the errors.

use crate::common;

use common::{Server, ask, guard, shell};
use gantry_testkit::Step;
use proto_code_agent::pb;
use proto_code_agent::pb::content_block::Block;
use serde_json::{Value, json};
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_returns_the_answer_tool_calls_and_usage() {
    let mut s = Server::start(vec![shell("echo from-the-tool"), Step::text("All done.")]).await;
    let session = s.session().await;
    let response = s
        .client
        .generate(ask(&session, "run it"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(response.session_id, session);
    let message = response.message.unwrap();
    assert_eq!(
        (message.role.as_str(), message.content.as_str()),
        ("assistant", "All done.")
    );
    assert_eq!(response.finish_reason, "stop");
    assert_eq!(response.tool_calls.len(), 1);
    let call = &response.tool_calls[0];
    assert_eq!(call.name, "bash");
    let args: Value = serde_json::from_str(&call.arguments).unwrap();
    assert_eq!(args["command"], "echo from-the-tool");
    let result = call.result.as_ref().unwrap();
    assert!(result.success, "{result:?}");
    assert!(result.output.contains("from-the-tool"), "{result:?}");
    let usage = response.usage.unwrap();
    assert!(
        usage.total_tokens > 0
            && usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    );
    assert_eq!(
        response.metadata["total_tokens"],
        usage.total_tokens.to_string()
    );

    // The conversation: the question, the call, its result, the answer.
    let messages = s
        .client
        .get_messages(pb::GetMessagesRequest {
            session_id: session.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .messages;
    let shape: Vec<(String, &str)> = messages
        .iter()
        .map(|m| {
            let kind = match m.content.first().and_then(|b| b.block.as_ref()) {
                Some(Block::Text(_)) => "text",
                Some(Block::ToolUse(_)) => "tool_use",
                Some(Block::ToolResult(_)) => "tool_result",
                None => "empty",
            };
            (m.role.clone(), kind)
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("user".to_owned(), "text"),
            ("assistant".to_owned(), "tool_use"),
            ("user".to_owned(), "tool_result"),
            ("assistant".to_owned(), "text"),
        ]
    );
    let Some(Block::ToolResult(r)) = &messages[2].content[0].block else {
        unreachable!()
    };
    assert_eq!(r.tool_use_id, call.id);
    assert!(!r.is_error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_generate_sends_chunks_as_they_happen_then_done() {
    let mut s = Server::start(vec![
        shell("echo streamed").with_text("Let me look. "),
        Step::text("It printed streamed.").with_chunk_size(4),
    ])
    .await;
    let session = s.session().await;
    let mut stream = s
        .client
        .stream_generate(ask(&session, "look"))
        .await
        .unwrap()
        .into_inner();
    let mut chunks = Vec::new();
    while let Some(chunk) = guard("a chunk", stream.message()).await.unwrap() {
        chunks.push(chunk);
    }
    let kinds: Vec<&str> = chunks.iter().map(|c| c.r#type.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"metadata"), "{kinds:?}");
    assert_eq!(chunks[0].metadata["event"], "turn_started");
    assert_eq!(kinds.last(), Some(&"done"), "{kinds:?}");
    let call_at = kinds.iter().position(|k| *k == "tool_call").unwrap();
    let result_at = kinds.iter().position(|k| *k == "tool_result").unwrap();
    assert!(call_at < result_at, "{kinds:?}");
    // The final answer streamed in several pieces after the tool result.
    let after: String = chunks[result_at..]
        .iter()
        .filter(|c| c.r#type == "content")
        .map(|c| c.content.as_str())
        .collect();
    assert_eq!(after, "It printed streamed.");
    assert!(
        chunks[result_at..]
            .iter()
            .filter(|c| c.r#type == "content")
            .count()
            > 1
    );
    let result = chunks[result_at].tool_result.as_ref().unwrap();
    assert!(
        result.success && result.output.contains("streamed"),
        "{result:?}"
    );
    assert_eq!(result.metadata["tool_name"], "bash");
    let done = chunks.last().unwrap();
    assert_eq!(done.content, "It printed streamed.");
    assert_eq!(done.finish_reason, "stop");
    assert!(done.metadata["total_tokens"].parse::<u32>().unwrap() > 0);
    assert!(chunks.iter().all(|c| c.session_id == session));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_llm_config_reaches_its_own_server() {
    let mut s = Server::start(vec![Step::text("hello from the session's server")]).await;
    let config = pb::SessionConfig {
        llm: Some(pb::LlmConfig {
            temperature: 0.5,
            max_tokens: 300,
            ..s.llm_config()
        }),
        system_prompt: "You are terse.".into(),
        ..Default::default()
    };
    let session = s
        .client
        .create_session(pb::CreateSessionRequest {
            config: Some(config),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .session_id;
    let answer = s
        .client
        .generate(ask(&session, "hi"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        answer.message.unwrap().content,
        "hello from the session's server"
    );
    let sent = &s.llm.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-session"));
    assert_eq!(sent.body["model"], "gpt-4.1-mini");
    assert_eq!(sent.body["max_tokens"], 300);
    assert_eq!(sent.body["temperature"], 0.5);
    assert_eq!(sent.body["messages"][0]["content"], "You are terse.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_errors_carry_the_right_status() {
    let mut s = Server::start(vec![Step::text("after resume")]).await;
    // A model server nobody listens on.
    let unreachable = s
        .client
        .create_session(pb::CreateSessionRequest {
            config: Some(pb::SessionConfig {
                llm: Some(pb::LlmConfig {
                    base_url: "http://127.0.0.1:9".into(),
                    ..s.llm_config()
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .session_id;
    let err = s
        .client
        .generate(ask(&unreachable, "hi"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");

    let session = s.session().await;
    let err = s
        .client
        .generate(pb::GenerateRequest {
            session_id: session.clone(),
            messages: vec![],
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("messages"), "{err:?}");

    s.client
        .pause(pb::PauseRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap();
    let err = s.client.generate(ask(&session, "hi")).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("paused"), "{err:?}");
    s.client
        .resume(pb::ResumeRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap();
    let answer = s
        .client
        .generate(ask(&session, "hi"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.message.unwrap().content, "after resume");

    s.client
        .destroy_session(pb::DestroySessionRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap();
    let err = s
        .client
        .stream_generate(ask(&session, "hi"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let err = s.client.generate(ask("nope", "hi")).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_stream_ends_it_and_the_session_goes_on() {
    let slow = Step::text("a long answer that takes its time to arrive")
        .with_chunk_size(2)
        .with_delay_ms(50);
    let mut s = Server::start(vec![slow, Step::text("next turn")]).await;
    let session = s.session().await;
    let mut stream = s
        .client
        .stream_generate(ask(&session, "talk"))
        .await
        .unwrap()
        .into_inner();
    while guard("content", stream.message())
        .await
        .unwrap()
        .unwrap()
        .r#type
        != "content"
    {}
    let wrong = s
        .client
        .cancel(pb::CancelRequest {
            session_id: session.clone(),
            operation_id: Some("not-the-turn".into()),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!wrong.success, "another operation id cancels nothing");
    let cancelled = s
        .client
        .cancel(pb::CancelRequest {
            session_id: session.clone(),
            operation_id: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(cancelled.success);
    let end = loop {
        match guard("the stream's end", stream.message()).await {
            Ok(Some(chunk)) => assert_ne!(chunk.r#type, "done"),
            Ok(None) => panic!("the stream ended without a status"),
            Err(status) => break status,
        }
    };
    assert_eq!(end.code(), Code::Cancelled, "{end:?}");
    let again = s
        .client
        .generate(ask(&session, "again"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.message.unwrap().content, "next turn");
    let nothing = s
        .client
        .cancel(pb::CancelRequest {
            session_id: session,
            operation_id: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!nothing.success, "nothing was running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_a_stream_interrupts_its_turn() {
    let slow = Step::text("nobody will read this to the end")
        .with_chunk_size(1)
        .with_delay_ms(50);
    let mut s = Server::start(vec![slow]).await;
    let session = s.session().await;
    let mut stream = s
        .client
        .stream_generate(ask(&session, "talk"))
        .await
        .unwrap()
        .into_inner();
    while guard("content", stream.message())
        .await
        .unwrap()
        .unwrap()
        .r#type
        != "content"
    {}
    drop(stream);
    let id = gantry_types::ThreadId::from(session.as_str());
    guard("the turn to end", async {
        loop {
            let view = s.engine.threads().read(&id).await.unwrap();
            if let Some(turn) = view.turns.last().filter(|t| t.turn.status.is_final()) {
                return turn.turn.status;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    let view = s.engine.threads().read(&id).await.unwrap();
    assert_eq!(
        view.turns.last().unwrap().turn.status,
        gantry_types::TurnStatus::Interrupted
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_output_whole_and_streamed() {
    let schema = json!({
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"]
    })
    .to_string();
    let mut s = Server::start(vec![
        Step::tool_call("submit_output", json!({"answer": 42})),
        Step::tool_call("submit_output", json!({"answer": "many"})),
        Step::tool_call("submit_output", json!({"answer": 7})),
    ])
    .await;
    let session = s.session().await;
    let request = |schema: &str| pb::GenerateStructuredRequest {
        session_id: session.clone(),
        messages: ask(&session, "how many?").messages,
        schema: schema.into(),
    };
    let whole = s
        .client
        .generate_structured(request(&schema))
        .await
        .unwrap()
        .into_inner();
    let data: Value = serde_json::from_str(&whole.data).unwrap();
    assert_eq!(data, json!({"answer": 42}));
    assert!(whole.usage.unwrap().total_tokens > 0);

    let mut stream = s
        .client
        .stream_generate_structured(request(&schema))
        .await
        .unwrap()
        .into_inner();
    let mut chunks = Vec::new();
    while let Some(chunk) = guard("a chunk", stream.message()).await.unwrap() {
        chunks.push(chunk);
    }
    let last = chunks.last().unwrap();
    assert!(last.done);
    assert_eq!(
        serde_json::from_str::<Value>(&last.data).unwrap(),
        json!({"answer": 7})
    );
    // The rejected first submission was retracted with an empty chunk.
    assert!(
        chunks.iter().any(|c| !c.done && c.data.is_empty()),
        "{chunks:?}"
    );

    for (bad, why) in [
        ("{not json", "not JSON"),
        (r#"{"$ref": "file:///etc/passwd"}"#, "schema"),
        ("", "required"),
    ] {
        let err = s
            .client
            .generate_structured(request(bad))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{bad}: {err:?}");
        assert!(err.message().contains(why), "{bad}: {err:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_output_answered_in_json_text() {
    let schema = json!({
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"]
    })
    .to_string();
    let mut s = Server::start(vec![
        Step::text(r#"{"answer": 42}"#),
        Step::text("forty-two"),
        Step::text("still not JSON"),
        Step::text("no"),
        Step::text("nope"),
    ])
    .await;
    let session = s.session().await;
    let request = pb::GenerateStructuredRequest {
        session_id: session.clone(),
        messages: ask(&session, "how many?").messages,
        schema,
    };
    let whole = s
        .client
        .generate_structured(request.clone())
        .await
        .unwrap()
        .into_inner();
    let data: Value = serde_json::from_str(&whole.data).unwrap();
    assert_eq!(data, json!({"answer": 42}));

    // Text that is no JSON is refused: the call fails once the retries are used.
    let err = s.client.generate_structured(request).await.unwrap_err();
    assert!(err.message().contains("not valid JSON"), "{err:?}");
}

/// `message` with `traceparent` metadata, as an OpenTelemetry-instrumented
/// client sends it.
fn traced<T>(message: T, traceparent: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    let value = traceparent.parse().expect("ASCII metadata");
    request.metadata_mut().insert("traceparent", value);
    request
}

/// The `trace_parent` of `session`'s last turn.
async fn last_trace_parent(s: &Server, session: &str) -> Option<String> {
    let id = gantry_types::ThreadId(session.to_owned());
    let view = s.engine.threads().read(&id).await.expect("read");
    view.turns.last().expect("a turn").turn.trace_parent.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rpcs_that_start_a_turn_keep_the_callers_traceparent_when_well_formed() {
    let json_answer = || Step::text(r#"{"answer": 42}"#);
    let mut s = Server::start(vec![
        Step::text("one"),
        Step::text("two"),
        Step::text("three"),
        Step::text("four"),
        json_answer(),
        json_answer(),
        Step::text("five"),
        Step::text("six"),
        Step::text("explored"),
        Step::text("explored again"),
    ])
    .await;
    let tp = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01";
    let kept = Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned());
    // An all-zero span id: not a `traceparent` the W3C allows.
    let malformed = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
    let session = s.session().await;
    let mut seen = Vec::new();

    for traceparent in [tp, malformed] {
        let request = traced(ask(&session, "hi"), traceparent);
        s.client.generate(request).await.expect("generate");
        seen.push(("Generate", last_trace_parent(&s, &session).await));
        let request = traced(ask(&session, "hi"), traceparent);
        let mut stream = s
            .client
            .stream_generate(request)
            .await
            .unwrap()
            .into_inner();
        while guard("a chunk", stream.message()).await.unwrap().is_some() {}
        seen.push(("StreamGenerate", last_trace_parent(&s, &session).await));
    }

    let structured = pb::GenerateStructuredRequest {
        session_id: session.clone(),
        messages: ask(&session, "how many?").messages,
        schema: json!({"type": "object"}).to_string(),
    };
    let request = traced(structured.clone(), tp);
    s.client
        .generate_structured(request)
        .await
        .expect("structured");
    seen.push(("GenerateStructured", last_trace_parent(&s, &session).await));
    let request = traced(structured, tp);
    let mut stream = s
        .client
        .stream_generate_structured(request)
        .await
        .unwrap()
        .into_inner();
    while guard("a chunk", stream.message()).await.unwrap().is_some() {}
    seen.push((
        "StreamGenerateStructured",
        last_trace_parent(&s, &session).await,
    ));

    let agentic = pb::AgenticGenerateRequest {
        session_id: session.clone(),
        prompt: "go".into(),
        ..Default::default()
    };
    let request = traced(agentic.clone(), tp);
    s.client.agentic_generate(request).await.expect("agentic");
    seen.push(("AgenticGenerate", last_trace_parent(&s, &session).await));
    let request = traced(agentic, tp);
    let mut stream = s
        .client
        .stream_agentic_generate(request)
        .await
        .unwrap()
        .into_inner();
    while guard("an event", stream.message()).await.unwrap().is_some() {}
    seen.push((
        "StreamAgenticGenerate",
        last_trace_parent(&s, &session).await,
    ));

    // A delegation's turn is the sub-agent's, in its own session.
    let delegation = pb::DelegateRequest {
        session_id: session.clone(),
        agent_name: "explore".into(),
        task: "look around".into(),
        ..Default::default()
    };
    let request = traced(delegation.clone(), tp);
    let child = s
        .client
        .delegate(request)
        .await
        .expect("delegate")
        .into_inner()
        .agent_session_id;
    seen.push(("Delegate", last_trace_parent(&s, &child).await));
    let request = traced(delegation, tp);
    let mut stream = s
        .client
        .stream_delegate(request)
        .await
        .unwrap()
        .into_inner();
    let mut child = None;
    while let Some(event) = guard("an event", stream.message()).await.unwrap() {
        child = child.or(event.agent_session_id);
    }
    let child = child.expect("the sub-agent's session");
    seen.push(("StreamDelegate", last_trace_parent(&s, &child).await));

    let expected: Vec<(&str, Option<String>)> = [
        ("Generate", true),
        ("StreamGenerate", true),
        ("Generate", false),
        ("StreamGenerate", false),
        ("GenerateStructured", true),
        ("StreamGenerateStructured", true),
        ("AgenticGenerate", true),
        ("StreamAgenticGenerate", true),
        ("Delegate", true),
        ("StreamDelegate", true),
    ]
    .into_iter()
    .map(|(rpc, valid)| (rpc, if valid { kept.clone() } else { None }))
    .collect();
    assert_eq!(seen, expected);
}

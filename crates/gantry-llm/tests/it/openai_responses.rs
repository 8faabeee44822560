//! The Responses API client against the real testkit server over HTTP.

use gantry_llm::openai_responses::OpenAiResponsesClient;
use gantry_llm::{ClientConfig, Message, ModelError, ModelEvent, ModelRequest, ReasoningBlock};
use gantry_testkit::{MockLlm, Step, ToolCallSpec, UsageSpec};
use gantry_types::{ToolSpec, Usage};
use serde_json::{Value, json};

use crate::common;
use common::*;

const MODEL: &str = "gpt-test";

fn client_for(base_url: &str, max_retries: u32) -> OpenAiResponsesClient {
    let mut config = ClientConfig::new(base_url);
    config.api_key = Some("test-key".into());
    config.retry = fast_retry(max_retries);
    OpenAiResponsesClient::new(config).unwrap()
}

fn client(llm: &MockLlm) -> OpenAiResponsesClient {
    client_for(&llm.base_url(), 3)
}

fn retries_of(events: &[ModelEvent]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Retrying { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn text_streamed_in_many_chunks_reassembles() {
    let text = "The quick brown fox jumps over the lazy dog. Ünïcödé ✓ survives chunking too.";
    let llm = MockLlm::start(vec![Step::text(text).with_chunk_size(3)]).unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(error, None);
    let deltas = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::TextDelta(_)))
        .count();
    assert!(deltas > 20, "expected many deltas, got {deltas}");
    assert_eq!(text_of(&events), text);
    // Who answered comes first, from `response.created`, and only once.
    assert_eq!(events[0], response("resp_gantry1", MODEL));
    assert_eq!(responses_of(&events).len(), 1);
    assert_eq!(events.last(), Some(&finished("stop")));
    let ends = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::Finished { .. }))
        .count();
    assert_eq!(ends, 1);
    assert_eq!(llm.requests()[0].path, "/v1/responses");
}

#[tokio::test]
async fn parallel_tool_calls_with_split_arguments_arrive_whole_and_in_order() {
    let step = Step::tool_calls(vec![
        ToolCallSpec::new("shell", json!({"command": "ls -la", "cwd": "/tmp"})).with_id("call_a"),
        ToolCallSpec::new("read_file", json!({"path": "src/main.rs"})),
        ToolCallSpec::new("edit", json!("{\"path\": \"unterminated")),
    ])
    .with_text("Looking.")
    .with_chunk_size(4);
    let llm = MockLlm::start(vec![step]).unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "Looking.");
    assert_eq!(
        calls_of(&events),
        vec![
            call("call_a", "shell", r#"{"command":"ls -la","cwd":"/tmp"}"#),
            call("call_2", "read_file", r#"{"path":"src/main.rs"}"#),
            // Invalid JSON is passed through untouched: the engine decides.
            call("call_3", "edit", "{\"path\": \"unterminated"),
        ]
    );
    assert_eq!(events.last(), Some(&finished("tool_calls")));
}

#[tokio::test]
async fn reasoning_streams_and_its_encrypted_content_is_sent_back() {
    let llm = MockLlm::start(vec![
        Step::tool_call("shell", json!({"command": "ls"}))
            .with_reasoning("The user wants a listing. I should run ls.")
            .with_text("Let me look.")
            .with_chunk_size(5),
        Step::text("Two files."),
    ])
    .unwrap();
    let client = client(&llm);
    let mut first = hello(MODEL);
    first.reasoning = Some("high".into());
    let (events, error) = run(&client, first.clone()).await;
    assert_eq!(error, None);

    let summary = reasoning_of(&events);
    assert_eq!(summary, "The user wants a listing. I should run ls.");
    let deltas = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::ReasoningDelta(_)))
        .count();
    assert!(deltas > 5, "{deltas}");
    // Reasoning comes first and is closed before the answer starts.
    let end = events
        .iter()
        .position(|e| matches!(e, ModelEvent::ReasoningEnd { .. }))
        .unwrap();
    let first_text = events
        .iter()
        .position(|e| matches!(e, ModelEvent::TextDelta(_)))
        .unwrap();
    assert!(end < first_text);
    let ModelEvent::ReasoningEnd { signature, opaque } = &events[end] else {
        unreachable!()
    };
    assert_eq!(signature, &None);
    let opaque = opaque.clone().expect("encrypted reasoning is returned");
    let decoded: Value = serde_json::from_str(&opaque).unwrap();
    let encrypted = decoded["encrypted_content"].as_str().unwrap().to_owned();
    assert!(encrypted.starts_with("gAAAA"), "{encrypted}");
    assert!(decoded["id"].as_str().unwrap().starts_with("rs_"));

    // The next round replays the whole conversation, reasoning included.
    let calls = calls_of(&events);
    let mut history = first.messages.to_vec();
    history.push(Message::Assistant {
        reasoning: vec![ReasoningBlock {
            text: summary.clone(),
            signature: None,
            opaque: Some(opaque),
        }],
        text: text_of(&events),
        tool_calls: calls.clone(),
    });
    history.push(Message::ToolResult {
        call_id: calls[0].id.clone(),
        output: "a.txt\nb.txt\n".into(),
    });
    let second = ModelRequest {
        messages: history.into(),
        ..first
    };
    let (events, error) = run(&client, second).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "Two files.");

    let requests = llm.requests();
    assert_eq!(
        requests[0].body["include"],
        json!(["reasoning.encrypted_content"])
    );
    assert_eq!(
        requests[1].body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}],
             "encrypted_content": encrypted},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Let me look."}]},
            {"type": "function_call", "call_id": "call_1", "name": "shell",
             "arguments": "{\"command\":\"ls\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt\nb.txt\n"},
        ])
    );
    assert!(requests[1].body.get("previous_response_id").is_none());
}

#[tokio::test]
async fn usage_reports_cached_and_reasoning_tokens() {
    let usage = UsageSpec {
        prompt_tokens: 1200,
        completion_tokens: 80,
        cached_tokens: 1024,
        reasoning_tokens: 64,
        ..UsageSpec::default()
    };
    let step = Step::text("ok")
        .with_reasoning("Let me think about it.")
        .with_usage(usage);
    let llm = MockLlm::start(vec![step]).unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(error, None);
    let n = events.len();
    assert_eq!(
        events[n - 2],
        ModelEvent::Usage(Usage {
            input_tokens: 1200,
            output_tokens: 80,
            cached_input_tokens: 1024,
            reasoning_tokens: 64,
            ..Usage::default()
        })
    );
    assert_eq!(events[n - 1], finished("stop"));
}

#[tokio::test]
async fn incomplete_response_finishes_with_its_reason() {
    let llm = MockLlm::start(vec![Step::text("cut short").with_finish_reason("length")]).unwrap();
    let mut request = hello(MODEL);
    request.max_output_tokens = Some(3);
    let (events, error) = run(&client(&llm), request).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "cut short");
    let n = events.len();
    assert!(matches!(events[n - 2], ModelEvent::Usage(_)));
    assert_eq!(events[n - 1], finished("max_output_tokens"));
}

#[tokio::test]
async fn unauthorized_fails_at_once_without_retry() {
    let llm = MockLlm::start(vec![Step::http_error(401), Step::text("never")]).unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(events, vec![]);
    match error {
        Some(ModelError::Auth { status: 401, body }) => {
            assert!(body.contains("scripted HTTP 401"), "{body}")
        }
        other => panic!("expected Auth, got {other:?}"),
    }
    assert_eq!(llm.request_count(), 1);
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_succeeds() {
    let llm = MockLlm::start(vec![
        Step::http_error(429).with_retry_after(0.05),
        Step::text("made it"),
    ])
    .unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(error, None);
    match &events[0] {
        ModelEvent::Retrying {
            attempt: 1,
            delay_ms: 50,
            reason,
        } => assert!(reason.contains("rate limited"), "{reason}"),
        other => panic!("expected Retrying first, got {other:?}"),
    }
    assert_eq!(text_of(&events), "made it");
    assert_eq!(llm.request_count(), 2);
}

#[tokio::test]
async fn server_errors_beyond_max_retries_fail() {
    let max_retries = 2;
    // Unavailable (a 500 twice alike is the server's answer, not a fault).
    let mut steps: Vec<Step> = (0..=max_retries).map(|_| Step::http_error(503)).collect();
    steps.push(Step::text("too late"));
    let llm = MockLlm::start(steps).unwrap();
    let (events, error) = run(&client_for(&llm.base_url(), max_retries), hello(MODEL)).await;
    assert_eq!(retries_of(&events), vec![1, 2]);
    assert!(
        matches!(error, Some(ModelError::Server { status: 503, .. })),
        "{error:?}"
    );
    assert_eq!(llm.request_count(), max_retries as usize + 1);
    assert_eq!(llm.remaining(), 1);
}

#[tokio::test]
async fn malformed_event_is_reported() {
    // Events: created, in_progress, item added, part added, "ab", then garbage.
    let llm = MockLlm::start(vec![
        Step::text("abcdef").with_chunk_size(2).malformed_after(5),
    ])
    .unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(text_of(&events), "ab");
    match error {
        Some(ModelError::MalformedStream(m)) => assert!(m.contains("{not json"), "{m}"),
        other => panic!("expected MalformedStream, got {other:?}"),
    }
    assert_eq!(llm.request_count(), 1);
}

#[tokio::test]
async fn cut_stream_keeps_text_received_before() {
    // Events: created, in_progress, item added, part added, "hello ", "world ", cut.
    let llm = MockLlm::start(vec![
        Step::text("hello world again")
            .with_chunk_size(6)
            .cut_after(6),
    ])
    .unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(text_of(&events), "hello world ");
    assert!(matches!(error, Some(ModelError::StreamCut(_))), "{error:?}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ModelEvent::Finished { .. }))
    );
    assert_eq!(
        llm.request_count(),
        1,
        "mid-stream failures are not retried"
    );
}

#[tokio::test]
async fn error_event_inside_the_stream_is_a_server_error() {
    let llm = MockLlm::start(vec![Step::text("partial").error_after(5)]).unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(text_of(&events), "partial");
    match error {
        Some(ModelError::Server { status: 500, body }) => {
            assert!(body.contains("scripted stream error"), "{body}")
        }
        other => panic!("expected Server, got {other:?}"),
    }
}

#[tokio::test]
async fn failed_response_is_a_server_error_with_its_message() {
    let sse = concat!(
        "event: response.created\n",
        r#"data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}"#,
        "\n\n",
        "event: response.failed\n",
        r#"data: {"type":"response.failed","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"failed","output":[],"usage":null,"error":{"code":"server_error","message":"The model failed to generate a response."}}}"#,
        "\n\n",
    );
    let llm = MockLlm::start(vec![Step::raw_sse(sse)]).unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    // `response.created` named the answer (with no model) before it failed.
    assert_eq!(
        events,
        vec![ModelEvent::Response {
            id: Some("resp_1".into()),
            model: None
        }]
    );
    match error {
        Some(ModelError::Server { body, .. }) => {
            assert!(
                body.contains("The model failed to generate a response."),
                "{body}"
            );
            assert!(body.contains("server_error"), "{body}");
        }
        other => panic!("expected Server, got {other:?}"),
    }
    assert_eq!(llm.request_count(), 1);
}

#[tokio::test]
async fn request_has_responses_shape() {
    let llm = MockLlm::start(vec![Step::text("fine"), Step::text("again")]).unwrap();
    let request = ModelRequest {
        model: "gpt-test".into(),
        instructions: Some("Be brief.".into()),
        messages: vec![
            Message::user("list files"),
            Message::Assistant {
                // Another provider's thinking cannot be replayed here.
                reasoning: vec![ReasoningBlock {
                    text: "Claude's thoughts".into(),
                    signature: Some("sig".into()),
                    opaque: None,
                }],
                text: String::new(),
                tool_calls: vec![call("call_1", "shell", r#"{"command":"ls"}"#)],
            },
            Message::ToolResult {
                call_id: "call_1".into(),
                output: "a.txt\n".into(),
            },
            Message::Assistant {
                reasoning: Vec::new(),
                text: "One file.".into(),
                tool_calls: vec![],
            },
            Message::user("thanks"),
        ]
        .into(),
        tools: vec![ToolSpec {
            name: "shell".into(),
            description: "Run a command".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        }]
        .into(),
        reasoning: Some("low".into()),
        max_output_tokens: Some(256),
        temperature: None,
        output_schema: None,
        trace_parent: None,
    };
    let client = client(&llm);
    let (_, error) = run(&client, request).await;
    assert_eq!(error, None);
    let (_, error) = run(&client, hello(MODEL)).await;
    assert_eq!(error, None);

    let requests = llm.requests();
    let recorded = &requests[0];
    assert_eq!(recorded.path, "/v1/responses");
    assert_eq!(recorded.header("authorization"), Some("Bearer test-key"));
    assert_eq!(recorded.header("content-type"), Some("application/json"));
    assert_eq!(recorded.header("accept"), Some("text/event-stream"));
    assert_eq!(
        recorded.body,
        json!({
            "model": "gpt-test",
            "instructions": "Be brief.",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
                {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": "{\"command\":\"ls\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "a.txt\n"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "One file."}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
            ],
            "tools": [{
                "type": "function", "name": "shell", "description": "Run a command",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
                "strict": false,
            }],
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "reasoning": {"effort": "low", "summary": "auto"},
            "max_output_tokens": 256,
        })
    );
    // Without reasoning, tools or a cap those fields are left out.
    assert_eq!(
        requests[1].body,
        json!({
            "model": "gpt-test",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}],
            "stream": true,
            "store": false,
        })
    );
}

#[tokio::test]
async fn recorded_tool_calls_and_text_replay() {
    let llm = MockLlm::start(vec![Step::raw_sse(include_str!(
        "../fixtures/openai_responses/tool_call_and_text.sse"
    ))])
    .unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(error, None);
    let deltas: Vec<ModelEvent> = [
        "I'll", " check", " the", " weather", " in", " both", " cities", ".",
    ]
    .into_iter()
    .map(|t| ModelEvent::TextDelta(t.into()))
    .collect();
    let mut expected = vec![response(
        "resp_68a4c2f1e9b08193a5d1c07f6e2b4a1d0c9e8f7a6b5c4d3e",
        "gpt-4.1-2025-04-14",
    )];
    expected.extend(deltas);
    expected.extend([
        ModelEvent::ToolCall(call(
            "call_Vq3kZx8mTf2LbN9sYp1RdWc4",
            "get_weather",
            r#"{"location":"Paris, France"}"#,
        )),
        ModelEvent::ToolCall(call(
            "call_H7wPq2nRt5XkLm8zJd3FbY6s",
            "get_weather",
            r#"{"location":"Bogotá, Colombia"}"#,
        )),
        ModelEvent::Usage(Usage {
            input_tokens: 312,
            output_tokens: 58,
            cached_input_tokens: 128,
            reasoning_tokens: 0,
            ..Usage::default()
        }),
        finished("tool_calls"),
    ]);
    // Argument fragments stream before each call; joined per call they are
    // exactly its arguments.
    let (fragments, events): (Vec<_>, Vec<_>) = events
        .into_iter()
        .partition(|e| matches!(e, ModelEvent::ToolCallDelta { .. }));
    assert_eq!(events, expected);
    let joined = |want: u64| -> String {
        fragments
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCallDelta {
                    index, arguments, ..
                } if *index == want => Some(arguments.as_str()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(joined(1), r#"{"location":"Paris, France"}"#);
    assert_eq!(joined(2), r#"{"location":"Bogotá, Colombia"}"#);
}

#[tokio::test]
async fn recorded_reasoning_and_text_replay() {
    let llm = MockLlm::start(vec![Step::raw_sse(include_str!(
        "../fixtures/openai_responses/reasoning_and_text.sse"
    ))])
    .unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(error, None);
    assert_eq!(
        reasoning_of(&events),
        "**Comparing numbers**\n\nThe user asks which is larger, 9.11 or 9.9. I compare the \
         tenths digit: 9 beats 1.\n\n**Answering**\n\nSo 9.9 is larger; I'll say so briefly."
    );
    assert_eq!(text_of(&events), "9.9 is larger than 9.11.");
    assert_eq!(
        responses_of(&events),
        [response(
            "resp_68a4c31b7d2c8190a4f6e3b2c1d0e9f80a1b2c3d4e5f6a7b",
            "gpt-5-2025-08-07"
        )]
    );
    assert_eq!(
        events[0],
        responses_of(&events)[0],
        "before the first delta"
    );
    let ends: Vec<&ModelEvent> = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::ReasoningEnd { .. }))
        .collect();
    assert_eq!(ends.len(), 1);
    let ModelEvent::ReasoningEnd {
        signature: None,
        opaque: Some(opaque),
    } = ends[0]
    else {
        panic!("expected opaque reasoning, got {ends:?}")
    };
    let opaque: Value = serde_json::from_str(opaque).unwrap();
    assert_eq!(
        opaque["id"],
        "rs_68a4c31c1e4081908c2d5f7a9b3e6d1c0a1b2c3d4e5f6a7b"
    );
    assert!(
        opaque["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAAABopMMe")
    );
    let n = events.len();
    assert_eq!(
        events[n - 2],
        ModelEvent::Usage(Usage {
            input_tokens: 1536,
            output_tokens: 214,
            cached_input_tokens: 1024,
            reasoning_tokens: 192,
            ..Usage::default()
        })
    );
    assert_eq!(events[n - 1], finished("stop"));
}

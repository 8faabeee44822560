//! The Chat Completions client against the real testkit server over HTTP.

use futures_util::StreamExt;
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_llm::{Message, ModelClient, ModelError, ModelEvent, ModelRequest, ToolCall};
use gantry_testkit::{MockLlm, Step, ToolCallSpec, UsageSpec};
use gantry_types::{ToolSpec, Usage};
use serde_json::json;

use crate::common;
use common::*;

const MODEL: &str = "test-model";

fn client_for(base_url: &str, max_retries: u32) -> OpenAiChatClient {
    let mut config = ClientConfig::new(base_url);
    config.api_key = Some("test-key".into());
    config.retry = fast_retry(max_retries);
    config
        .extra_headers
        .push(("x-title".into(), "gantry-tests".into()));
    OpenAiChatClient::new(config).unwrap()
}

fn client(llm: &MockLlm) -> OpenAiChatClient {
    client_for(&llm.base_url(), 3)
}

fn retries_of(events: &[ModelEvent]) -> Vec<(u32, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Retrying {
                attempt, delay_ms, ..
            } => Some((*attempt, *delay_ms)),
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
    // Every chunk names the completion and its model; the first says it once.
    assert_eq!(events[0], response("chatcmpl-gantry1", MODEL));
    assert_eq!(responses_of(&events).len(), 1);
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished {
            finish_reason: Some("stop".into())
        })
    );
    let finished = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::Finished { .. }))
        .count();
    assert_eq!(finished, 1);
}

#[tokio::test]
async fn parallel_tool_calls_with_split_arguments_arrive_whole() {
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
            ToolCall {
                id: "call_a".into(),
                name: "shell".into(),
                arguments: r#"{"command":"ls -la","cwd":"/tmp"}"#.into()
            },
            ToolCall {
                id: "call_2".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"src/main.rs"}"#.into()
            },
            // Invalid JSON is passed through untouched: the engine decides.
            ToolCall {
                id: "call_3".into(),
                name: "edit".into(),
                arguments: "{\"path\": \"unterminated".into()
            },
        ]
    );
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Finished {
            finish_reason: Some("tool_calls".into())
        })
    );
}

#[tokio::test]
async fn an_unstreamed_answer_is_named_before_its_content() {
    let usage = UsageSpec {
        prompt_tokens: 7,
        completion_tokens: 2,
        ..UsageSpec::default()
    };
    let llm = MockLlm::start(vec![Step::text("whole").with_usage(usage)]).unwrap();
    let mut config = ClientConfig::new(llm.base_url());
    config.stream = false;
    let client = OpenAiChatClient::new(config).unwrap();
    let (events, error) = run(&client, hello(MODEL)).await;
    assert_eq!(error, None);
    assert!(llm.requests()[0].body.get("stream").is_none());
    assert_eq!(
        events,
        vec![
            response("chatcmpl-gantry1", MODEL),
            ModelEvent::TextDelta("whole".into()),
            ModelEvent::Usage(Usage {
                input_tokens: 7,
                output_tokens: 2,
                ..Usage::default()
            }),
            finished("stop"),
        ]
    );
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
        .with_chunk_size(5)
        .with_usage(usage);
    let llm = MockLlm::start(vec![step]).unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(error, None);
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "Let me think about it.");
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
    assert!(matches!(events[n - 1], ModelEvent::Finished { .. }));
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
    assert_eq!(retries_of(&events), vec![(1, 50)]);
    match &events[0] {
        ModelEvent::Retrying { reason, .. } => assert!(reason.contains("rate limited"), "{reason}"),
        other => panic!("expected Retrying first, got {other:?}"),
    }
    assert_eq!(text_of(&events), "made it");
    // Only the answer that came is named: the second step served.
    assert_eq!(responses_of(&events), [response("chatcmpl-gantry2", MODEL)]);
    assert_eq!(events[1], response("chatcmpl-gantry2", MODEL));
    assert_eq!(llm.request_count(), 2);
}

#[tokio::test]
async fn server_errors_beyond_max_retries_fail() {
    let max_retries = 2;
    let mut steps: Vec<Step> = (0..=max_retries).map(|_| Step::http_error(503)).collect();
    steps.push(Step::text("too late"));
    let llm = MockLlm::start(steps).unwrap();
    let (events, error) = run(&client_for(&llm.base_url(), max_retries), hello(MODEL)).await;
    assert_eq!(
        retries_of(&events).iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert!(
        matches!(error, Some(ModelError::Server { status: 503, .. })),
        "{error:?}"
    );
    assert_eq!(llm.request_count(), max_retries as usize + 1);
    assert_eq!(llm.remaining(), 1);
}

#[tokio::test]
async fn malformed_event_is_reported() {
    let llm = MockLlm::start(vec![
        Step::text("abcdef").with_chunk_size(2).malformed_after(2),
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
    // Events: role, "hello ", "world ", cut.
    let llm = MockLlm::start(vec![
        Step::text("hello world again")
            .with_chunk_size(6)
            .cut_after(3),
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
async fn error_inside_the_stream_is_a_server_error() {
    let llm = MockLlm::start(vec![Step::text("partial").error_after(2)]).unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(text_of(&events), "partial");
    match error {
        Some(ModelError::Server { status: 500, body }) => {
            assert!(body.contains("scripted stream error"))
        }
        other => panic!("expected Server, got {other:?}"),
    }
}

#[tokio::test]
async fn request_has_openai_shape() {
    let llm = MockLlm::start(vec![Step::text("fine")]).unwrap();
    let request = ModelRequest {
        model: "gpt-test".into(),
        instructions: Some("Be brief.".into()),
        messages: vec![
            Message::user("list files"),
            Message::Assistant {
                reasoning: Vec::new(),
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "shell".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                }],
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
        trace_parent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
    };
    let (_, error) = run(&client(&llm), request).await;
    assert_eq!(error, None);
    let requests = llm.requests();
    let recorded = &requests[0];
    assert_eq!(recorded.path, "/v1/chat/completions");
    assert_eq!(recorded.header("authorization"), Some("Bearer test-key"));
    assert_eq!(
        recorded.header("traceparent"),
        Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        "the turn's trace goes on to the provider"
    );
    assert_eq!(recorded.header("x-title"), Some("gantry-tests"));
    assert_eq!(recorded.header("content-type"), Some("application/json"));
    assert_eq!(
        recorded.body,
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"ls\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\n"},
                {"role": "assistant", "content": "One file."},
                {"role": "user", "content": "thanks"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "shell", "description": "Run a command",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            }}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "reasoning_effort": "low",
            "max_tokens": 256,
        })
    );
}

#[tokio::test]
async fn base_url_without_version_reaches_the_same_endpoint() {
    let llm = MockLlm::start(vec![Step::text("hi")]).unwrap();
    let root = format!("http://{}", llm.addr());
    let (events, error) = run(&client_for(&root, 0), hello(MODEL)).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "hi");
    assert_eq!(llm.requests()[0].path, "/v1/chat/completions");
}

#[tokio::test]
async fn connection_refused_is_a_connect_error() {
    // Bind then drop, so the port is (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (events, error) = run(
        &client_for(&format!("http://127.0.0.1:{port}/v1"), 1),
        hello(MODEL),
    )
    .await;
    assert_eq!(retries_of(&events).len(), 1, "connect failures are retried");
    match error {
        Some(ModelError::Connect { url, reason }) => {
            assert_eq!(url, format!("http://127.0.0.1:{port}/v1/chat/completions"));
            assert!(reason.to_lowercase().contains("refused"), "{reason}");
        }
        other => panic!("expected Connect, got {other:?}"),
    }
}

#[tokio::test]
async fn exhausted_script_is_a_bad_request_not_retried() {
    let llm = MockLlm::start(Vec::<Step>::new()).unwrap();
    let (_, error) = run(&client(&llm), hello(MODEL)).await;
    match error {
        Some(ModelError::BadRequest { status: 400, body }) => {
            assert!(body.contains("script exhausted after 0 requests"), "{body}")
        }
        other => panic!("expected BadRequest, got {other:?}"),
    }
    assert_eq!(llm.request_count(), 1);
}

#[tokio::test]
async fn stream_is_lazy_and_can_be_dropped_midway() {
    let llm = MockLlm::start(vec![
        Step::text("x".repeat(100)).with_chunk_size(1),
        Step::text("next"),
    ])
    .unwrap();
    let client = client(&llm);
    let stream = client.stream(hello(MODEL));
    assert_eq!(
        llm.request_count(),
        0,
        "nothing is sent before the stream is polled"
    );
    drop(stream);

    let mut stream = client.stream(hello(MODEL));
    assert_eq!(
        stream.next().await,
        Some(Ok(response("chatcmpl-gantry1", MODEL)))
    );
    assert!(matches!(
        stream.next().await,
        Some(Ok(ModelEvent::TextDelta(_)))
    ));
    drop(stream);
    // The client is still usable after abandoning a request.
    let (events, error) = run(&client, hello(MODEL)).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "next");
}

/// A server that cannot parse what it was sent answers the same 500 each
/// time (llama.cpp's, SGLang's): the second alike answer ends the retries,
/// where an unavailable server (503) is waited out.
#[tokio::test]
async fn the_same_internal_error_twice_is_not_retried_again() {
    let body = serde_json::json!({"error": {"message": "Input should be a valid string",
        "type": "internal_server_error"}});
    let steps: Vec<Step> = (0..5)
        .map(|_| Step::http_error(500).with_body(body.clone()))
        .collect();
    let llm = MockLlm::start(steps).unwrap();
    let (events, error) = run(&client_for(&llm.base_url(), 4), hello(MODEL)).await;
    assert_eq!(retries_of(&events).len(), 1, "retried once, to be sure");
    assert!(
        matches!(&error, Some(ModelError::Server { status: 500, body }) if body.contains("valid string")),
        "{error:?}"
    );
    assert_eq!(llm.request_count(), 2);
}

/// A structured request to a server that knows no `json_schema` format:
/// what llama-cpp-python 0.3 answers, word for word.
#[tokio::test]
async fn a_server_refusing_native_structured_output_is_asked_without_it() {
    let refusal = json!({"error": {"message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}", "type": "internal_server_error", "param": null, "code": null}});
    let llm = MockLlm::start(vec![
        Step::Error(gantry_testkit::HttpError {
            status: 500,
            retry_after: None,
            body: Some(refusal),
        }),
        Step::text(r#"{"answer": "yes"}"#),
        Step::text(r#"{"answer": "no"}"#),
    ])
    .unwrap();
    let client = client_for(&llm.base_url(), 0);
    let structured = || {
        let mut request = hello(MODEL);
        request.output_schema = Some(gantry_llm::OutputSchema {
            name: "verdict".into(),
            schema: json!({"type": "object", "properties": {"answer": {"type": "string"}}}),
        });
        request
    };
    let (events, error) = run(&client, structured()).await;
    assert_eq!(error, None, "not a failure, though no retries are allowed");
    assert_eq!(text_of(&events), r#"{"answer": "yes"}"#);
    assert!(retries_of(&events).is_empty(), "not a retry: {events:?}");
    let (_, error) = run(&client, structured()).await;
    assert_eq!(error, None);
    let formats: Vec<bool> = llm
        .requests()
        .iter()
        .map(|r| r.body.get("response_format").is_some())
        .collect();
    assert_eq!(
        formats,
        [true, false, false],
        "asked once with it, then without it, and not again"
    );
}

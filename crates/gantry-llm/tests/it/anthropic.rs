//! The Anthropic Messages client against the real testkit server over HTTP.

use gantry_llm::anthropic::{API_VERSION, AnthropicClient, DEFAULT_MAX_TOKENS};
use gantry_llm::{
    ClientConfig, Message, ModelError, ModelEvent, ModelRequest, ReasoningBlock, ToolCall,
};
use gantry_testkit::{MockLlm, Step, ToolCallSpec, UsageSpec};
use gantry_types::{ToolSpec, Usage};
use serde_json::json;

use crate::common;
use common::*;

const MODEL: &str = "claude-test";

fn client_with(llm: &MockLlm, max_retries: u32) -> AnthropicClient {
    let mut config = ClientConfig::new(llm.base_url());
    config.api_key = Some("sk-ant-test".into());
    config.retry = fast_retry(max_retries);
    config.extra_headers.push((
        "anthropic-beta".into(),
        "interleaved-thinking-2025-05-14".into(),
    ));
    AnthropicClient::new(config).unwrap()
}

fn client(llm: &MockLlm) -> AnthropicClient {
    client_with(llm, 3)
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
    // Who answered comes first, from `message_start`, and only once.
    assert_eq!(events[0], response("msg_gantry1", MODEL));
    assert_eq!(responses_of(&events).len(), 1);
    assert_eq!(events.last(), Some(&finished("end_turn")));
    assert!(matches!(events[events.len() - 2], ModelEvent::Usage(_)));
    let n_finished = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::Finished { .. }))
        .count();
    assert_eq!(n_finished, 1);
}

#[tokio::test]
async fn parallel_tool_use_blocks_with_fragmented_input_arrive_whole_and_in_order() {
    let step = Step::tool_calls(vec![
        ToolCallSpec::new("shell", json!({"command": "ls -la", "cwd": "/tmp"}))
            .with_id("toolu_01A"),
        ToolCallSpec::new("read_file", json!({"path": "src/main.rs", "limit": 40})),
    ])
    .with_text("Looking.")
    .with_chunk_size(3);
    let llm = MockLlm::start(vec![step]).unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "Looking.");
    assert_eq!(
        calls_of(&events),
        vec![
            ToolCall {
                id: "toolu_01A".into(),
                name: "shell".into(),
                arguments: r#"{"command":"ls -la","cwd":"/tmp"}"#.into(),
            },
            ToolCall {
                id: "toolu_2".into(),
                name: "read_file".into(),
                arguments: r#"{"limit":40,"path":"src/main.rs"}"#.into(),
            },
        ]
    );
    // Text first, then the calls, then usage and the finish.
    let first_call = events
        .iter()
        .position(|e| matches!(e, ModelEvent::ToolCall(_)))
        .unwrap();
    let last_text = events
        .iter()
        .rposition(|e| matches!(e, ModelEvent::TextDelta(_)))
        .unwrap();
    assert!(last_text < first_call);
    assert_eq!(events.last(), Some(&finished("tool_use")));
}

#[tokio::test]
async fn thinking_signature_is_sent_back_before_the_tool_use() {
    let llm = MockLlm::start(vec![
        Step::tool_call("shell", json!({"command": "ls"}))
            .with_reasoning("I should list the files first.")
            .with_chunk_size(5),
        Step::text("Two files."),
    ])
    .unwrap();
    let client = client(&llm);
    let mut request = hello(MODEL);
    request.reasoning = Some("medium".into());
    let (events, error) = run(&client, request.clone()).await;
    assert_eq!(error, None);
    assert_eq!(reasoning_of(&events), "I should list the files first.");
    let ends: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningEnd { signature, opaque } => Some((signature.clone(), opaque)),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 1);
    let signature = ends[0]
        .0
        .clone()
        .expect("thinking block carries a signature");
    assert!(!signature.is_empty());
    assert_eq!(ends[0].1, &None);
    // Reasoning is complete before the call.
    let end_at = events
        .iter()
        .position(|e| matches!(e, ModelEvent::ReasoningEnd { .. }))
        .unwrap();
    let call_at = events
        .iter()
        .position(|e| matches!(e, ModelEvent::ToolCall(_)))
        .unwrap();
    assert!(end_at < call_at);
    let call = calls_of(&events).remove(0);

    let mut history = request.messages.to_vec();
    history.push(Message::Assistant {
        reasoning: vec![ReasoningBlock {
            text: reasoning_of(&events),
            signature: Some(signature.clone()),
            opaque: None,
        }],
        text: String::new(),
        tool_calls: vec![call.clone()],
    });
    history.push(Message::ToolResult {
        call_id: call.id.clone(),
        output: "a.txt\nb.txt".into(),
    });
    request.messages = history.into();
    let (events, error) = run(&client, request).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "Two files.");

    let body = &llm.requests()[1].body;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "hello"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should list the files first.",
                 "signature": signature},
                {"type": "tool_use", "id": call.id, "name": "shell", "input": {"command": "ls"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call.id, "content": "a.txt\nb.txt"},
            ]},
        ])
    );
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );
}

#[tokio::test]
async fn usage_is_normalized_from_the_wire() {
    let llm = MockLlm::start(vec![Step::text("ok").with_usage(UsageSpec {
        prompt_tokens: 100,
        completion_tokens: 20,
        cached_tokens: 60,
        cache_write_tokens: 10,
        reasoning_tokens: 0,
    })])
    .unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(error, None);
    // The wire sends input_tokens 30 + cache_read 60 + cache_creation 10;
    // Gantry counts them together.
    assert_eq!(
        usage_of(&events),
        vec![Usage {
            input_tokens: 100,
            output_tokens: 20,
            cached_input_tokens: 60,
            cache_write_tokens: 10,
            reasoning_tokens: 0,
        }]
    );
}

#[tokio::test]
async fn headers_carry_key_version_and_extras() {
    let llm = MockLlm::start(vec![Step::text("ok")]).unwrap();
    let (_, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(error, None);
    let req = &llm.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(req.header("anthropic-version"), Some(API_VERSION));
    assert_eq!(
        req.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
    assert_eq!(req.header("authorization"), None);
    assert_eq!(req.header("accept"), Some("text/event-stream"));
}

#[tokio::test]
async fn unauthorized_is_final_and_keeps_the_anthropic_error_body() {
    let llm = MockLlm::start(vec![Step::http_error(401), Step::text("never")]).unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert!(events.is_empty(), "{events:?}");
    match error {
        Some(ModelError::Auth { status: 401, body }) => {
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(v["type"], "error");
            assert_eq!(v["error"]["type"], "authentication_error");
        }
        other => panic!("expected Auth, got {other:?}"),
    }
    assert_eq!(llm.request_count(), 1);
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_succeeds() {
    let llm = MockLlm::start(vec![
        Step::http_error(429).with_retry_after(0.05),
        Step::text("after the wait"),
    ])
    .unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(error, None);
    match &events[0] {
        ModelEvent::Retrying {
            attempt: 1,
            delay_ms: 50,
            reason,
        } => assert!(reason.contains("rate_limit_error"), "{reason}"),
        other => panic!("expected Retrying, got {other:?}"),
    }
    assert_eq!(text_of(&events), "after the wait");
    assert_eq!(llm.request_count(), 2);
}

#[tokio::test]
async fn overloaded_529_beyond_max_retries_is_a_server_error() {
    let llm = MockLlm::start(vec![
        Step::http_error(529),
        Step::http_error(529),
        Step::http_error(529),
        Step::text("never"),
    ])
    .unwrap();
    let (events, error) = run(&client_with(&llm, 2), hello(MODEL)).await;
    let retries = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::Retrying { .. }))
        .count();
    assert_eq!(retries, 2);
    match error {
        Some(ModelError::Server { status: 529, body }) => {
            assert!(body.contains("overloaded_error"), "{body}");
        }
        other => panic!("expected Server 529, got {other:?}"),
    }
    assert_eq!(llm.request_count(), 3);
}

#[tokio::test]
async fn malformed_event_is_a_malformed_stream() {
    let llm = MockLlm::start(vec![Step::text("hello there").malformed_after(3)]).unwrap();
    let (_, error) = run(&client(&llm), hello(MODEL)).await;
    assert!(
        matches!(&error, Some(ModelError::MalformedStream(m)) if m.contains("{not json")),
        "{error:?}"
    );
}

#[tokio::test]
async fn cut_stream_delivers_earlier_text_then_stream_cut() {
    // message_start, ping, content_block_start, then "abc" and "def": cut after 5.
    let llm = MockLlm::start(vec![
        Step::text("abcdefghijkl").with_chunk_size(3).cut_after(5),
    ])
    .unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(text_of(&events), "abcdef");
    assert!(matches!(error, Some(ModelError::StreamCut(_))), "{error:?}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ModelEvent::Finished { .. }))
    );
    // Nothing was retried: text had already been delivered.
    assert_eq!(llm.request_count(), 1);
}

#[tokio::test]
async fn in_stream_overloaded_error_is_a_server_error() {
    let llm = MockLlm::start(vec![Step::text("abcdef").with_chunk_size(2).error_after(4)]).unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(text_of(&events), "ab");
    match error {
        Some(ModelError::Server { status: 529, body }) => {
            assert!(body.contains("Overloaded"), "{body}");
        }
        other => panic!("expected Server 529, got {other:?}"),
    }
}

#[tokio::test]
async fn request_body_has_the_messages_api_shape() {
    let llm = MockLlm::start(vec![Step::text("one"), Step::text("two")]).unwrap();
    let client = client(&llm);
    let call = |id: &str, args: &str| ToolCall {
        id: id.into(),
        name: "shell".into(),
        arguments: args.into(),
    };
    let request = ModelRequest {
        model: "claude-sonnet-4-5".into(),
        instructions: Some("You are terse.".into()),
        messages: vec![
            Message::user("hi"),
            Message::Assistant {
                // No signature: another provider's reasoning, which the API would reject.
                reasoning: vec![ReasoningBlock {
                    text: "unsigned".into(),
                    ..ReasoningBlock::default()
                }],
                text: "Running both.".into(),
                tool_calls: vec![
                    call("toolu_a", r#"{"command":"ls"}"#),
                    call("toolu_b", "{oops"),
                ],
            },
            Message::ToolResult {
                call_id: "toolu_a".into(),
                output: "a.txt".into(),
            },
            Message::ToolResult {
                call_id: "toolu_b".into(),
                output: "error: invalid JSON arguments".into(),
            },
            Message::user("and now?"),
        ]
        .into(),
        tools: vec![ToolSpec {
            name: "shell".into(),
            description: "Runs a command.".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        }]
        .into(),
        reasoning: None,
        max_output_tokens: Some(2000),
        temperature: None,
        output_schema: None,
        trace_parent: None,
    };
    let (_, error) = run(&client, request.clone()).await;
    assert_eq!(error, None);
    let body = &llm.requests()[0].body;
    assert_eq!(
        *body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 2000,
            "system": "You are terse.",
            "stream": true,
            "tools": [{"name": "shell", "description": "Runs a command.",
                       "input_schema": {"type": "object",
                                        "properties": {"command": {"type": "string"}}}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Running both."},
                    {"type": "tool_use", "id": "toolu_a", "name": "shell",
                     "input": {"command": "ls"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "shell", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "a.txt"},
                    {"type": "tool_result", "tool_use_id": "toolu_b",
                     "content": "error: invalid JSON arguments"},
                    {"type": "text", "text": "and now?"},
                ]},
            ],
        })
    );

    // With reasoning: thinking on, max_tokens raised above the budget.
    let request = ModelRequest {
        reasoning: Some("high".into()),
        instructions: None,
        tools: Vec::new().into(),
        max_output_tokens: None,
        temperature: None,
        ..request
    };
    let (_, error) = run(&client, request).await;
    assert_eq!(error, None);
    let body = &llm.requests()[1].body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 16384})
    );
    assert_eq!(body["max_tokens"], 16384 + DEFAULT_MAX_TOKENS);
    assert!(body.get("system").is_none());
    assert!(body.get("tools").is_none());
}

#[tokio::test]
async fn recorded_plain_text_stream_replays() {
    let llm = MockLlm::start(vec![Step::raw_sse(include_str!(
        "../fixtures/anthropic/text.sse"
    ))])
    .unwrap();
    let (events, error) = run(&client(&llm), hello(MODEL)).await;
    assert_eq!(error, None);
    assert_eq!(
        events,
        vec![
            response(
                "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY",
                "claude-sonnet-4-5-20250929"
            ),
            ModelEvent::TextDelta("Hello".into()),
            ModelEvent::TextDelta("!".into()),
            ModelEvent::Usage(Usage {
                input_tokens: 25,
                output_tokens: 15,
                ..Usage::default()
            }),
            finished("end_turn"),
        ]
    );
}

#[tokio::test]
async fn recorded_tool_use_with_thinking_replays() {
    let llm = MockLlm::start(vec![Step::raw_sse(include_str!(
        "../fixtures/anthropic/tool_use_with_thinking.sse"
    ))])
    .unwrap();
    let mut request = hello(MODEL);
    request.reasoning = Some("low".into());
    let (events, error) = run(&client(&llm), request).await;
    assert_eq!(error, None);
    let signature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds6Ojl8KAVhDAsW9SjNNmkJ3WjhVoeN01k4hSmNHdlpZrjVsPqGqnpoJqyaHxEYI7mKwWn4eqL8K3NRoiLT3sFXv5Dh8JQfNw";
    let arg_delta = |piece: &str| ModelEvent::ToolCallDelta {
        index: 2,
        name: "get_weather".into(),
        arguments: piece.into(),
    };
    assert_eq!(
        events,
        vec![
            response("msg_01Vb2W8GfPpEBpRtV9x4XLhc", "claude-sonnet-4-5-20250929"),
            ModelEvent::ReasoningDelta("The user wants the current weather in Paris.".into()),
            ModelEvent::ReasoningDelta(
                " I have a get_weather tool that takes a location and a unit,".into()
            ),
            ModelEvent::ReasoningDelta(" so I'll call it with Paris, France in celsius.".into()),
            ModelEvent::ReasoningEnd {
                signature: Some(signature.into()),
                opaque: None,
            },
            ModelEvent::TextDelta("I'll check the current".into()),
            ModelEvent::TextDelta(" weather in Paris for you.".into()),
            // The input streams as it arrives, then the whole call.
            arg_delta(r#"{"location":"#),
            arg_delta(r#" "Paris, Fr"#),
            arg_delta(r#"ance", "unit": "c"#),
            arg_delta(r#"elsius"}"#),
            ModelEvent::ToolCall(ToolCall {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "get_weather".into(),
                arguments: r#"{"location": "Paris, France", "unit": "celsius"}"#.into(),
            }),
            // 472 uncached + 2048 cache reads + 1024 cache writes.
            ModelEvent::Usage(Usage {
                input_tokens: 3544,
                output_tokens: 89,
                cached_input_tokens: 2048,
                cache_write_tokens: 1024,
                reasoning_tokens: 0,
            }),
            finished("tool_use"),
        ]
    );
    assert_eq!(
        llm.requests()[0].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
}

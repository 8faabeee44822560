//! The server over raw HTTP/1.1, so the exact bytes on the wire are checked.

use gantry_scripted_model::{MockLlm, Step};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Status line + headers (lower-cased) and the raw body of one request.
async fn post(llm: &MockLlm, path: &str, body: &Value) -> (String, String) {
    let body = body.to_string();
    let mut tcp = TcpStream::connect(llm.addr()).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer k\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    // A scripted cut ends the read with an error; what arrived is still kept.
    let _ = tcp.read_to_end(&mut response).await;
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.to_lowercase(), body.to_owned())
}

/// The JSON of every `data:` event, `[DONE]` as a string.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap_or_else(|_| Value::String(d.to_owned())))
        .collect()
}

fn chat(stream: bool) -> Value {
    json!({"model": "m1", "messages": [{"role": "user", "content": "hi"}],
           "stream": stream, "stream_options": {"include_usage": true}})
}

#[tokio::test]
async fn streams_openai_chunks_then_usage_then_done() {
    let llm = MockLlm::start(vec![Step::text("hello").with_chunk_size(2)]).unwrap();
    let (head, body) = post(&llm, "/v1/chat/completions", &chat(true)).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(body.contains("data: [DONE]\n\n"));
    let events = events(&body);
    let text: String = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "hello");
    assert_eq!(events[0]["object"], "chat.completion.chunk");
    assert_eq!(events[0]["model"], "m1");
    let n = events.len();
    assert_eq!(events[n - 3]["choices"][0]["finish_reason"], "stop");
    assert_eq!(events[n - 2]["choices"], json!([]));
    assert!(events[n - 2]["usage"]["prompt_tokens_details"]["cached_tokens"].is_u64());
    assert_eq!(events[n - 1], "[DONE]");

    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("Authorization"), Some("Bearer k"));
    assert_eq!(requests[0].body["model"], "m1");
    assert_eq!(llm.remaining(), 0);
}

#[tokio::test]
async fn each_answer_is_named_like_its_providers_are() {
    let llm = MockLlm::start(vec![
        Step::text("hello").with_chunk_size(2),
        Step::text("hi").with_model("m1-2025-01-01"),
        Step::text("hi"),
        Step::text("hi"),
    ])
    .unwrap();
    // Chat Completions: every chunk, the usage chunk too.
    let (_, body) = post(&llm, "/v1/chat/completions", &chat(true)).await;
    let chunks: Vec<Value> = events(&body).into_iter().filter(Value::is_object).collect();
    assert!(chunks.len() > 3, "{chunks:?}");
    for chunk in &chunks {
        assert_eq!(
            (&chunk["id"], &chunk["model"]),
            (&json!("chatcmpl-gantry1"), &json!("m1")),
            "{chunk}"
        );
    }
    // A reply may name another model than the one asked for.
    let (_, body) = post(&llm, "/v1/chat/completions", &chat(false)).await;
    let whole: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (&whole["id"], &whole["model"]),
        (&json!("chatcmpl-gantry2"), &json!("m1-2025-01-01"))
    );
    let ask = |model: &str| {
        json!({"model": model, "max_tokens": 8, "stream": true,
               "input": "hi", "messages": [{"role": "user", "content": "hi"}]})
    };
    let (_, body) = post(&llm, "/v1/responses", &ask("m2")).await;
    let created = &events(&body)[0];
    assert_eq!(created["type"], "response.created");
    assert_eq!(
        (&created["response"]["id"], &created["response"]["model"]),
        (&json!("resp_gantry3"), &json!("m2"))
    );
    let (_, body) = post(&llm, "/v1/messages", &ask("m3")).await;
    let start = &events(&body)[0];
    assert_eq!(start["type"], "message_start");
    assert_eq!(
        (&start["message"]["id"], &start["message"]["model"]),
        (&json!("msg_gantry4"), &json!("m3"))
    );
}

#[tokio::test]
async fn errors_carry_status_retry_after_and_body() {
    let llm = MockLlm::start(vec![Step::http_error(429).with_retry_after(7.0)]).unwrap();
    let (head, body) = post(&llm, "/chat/completions", &chat(true)).await;
    assert!(head.starts_with("http/1.1 429"), "{head}");
    assert!(head.contains("retry-after: 7"), "{head}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
}

#[tokio::test]
async fn exhausted_script_answers_400() {
    let llm = MockLlm::start(vec![Step::text("one")]).unwrap();
    post(&llm, "/v1/chat/completions", &chat(false)).await;
    let (head, body) = post(&llm, "/v1/chat/completions", &chat(false)).await;
    assert!(head.starts_with("http/1.1 400"), "{head}");
    assert!(
        body.contains("gantry-scripted-model: script exhausted after 1 requests"),
        "{body}"
    );
}

#[tokio::test]
async fn non_streaming_request_gets_one_completion() {
    let llm = MockLlm::start(vec![
        Step::tool_call("shell", json!({"c": 1})).with_text("ok"),
    ])
    .unwrap();
    let (head, body) = post(&llm, "/v1/chat/completions", &chat(false)).await;
    assert!(head.contains("content-type: application/json"), "{head}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["object"], "chat.completion");
    let message = &body["choices"][0]["message"];
    assert_eq!(message["content"], "ok");
    assert_eq!(message["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        message["tool_calls"][0]["function"]["arguments"],
        "{\"c\":1}"
    );
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn cut_stops_without_done() {
    let llm = MockLlm::start(vec![Step::text("abcdef").with_chunk_size(2).cut_after(2)]).unwrap();
    let (_, body) = post(&llm, "/v1/chat/completions", &chat(true)).await;
    let events = events(&body);
    assert_eq!(events.len(), 2, "{body}");
    assert_eq!(events[1]["choices"][0]["delta"]["content"], "ab");
}

#[tokio::test]
async fn dropping_the_server_closes_the_port() {
    let llm = MockLlm::start(Vec::<Step>::new()).unwrap();
    let addr = llm.addr();
    drop(llm);
    // The listener is gone once the background task sees the signal.
    let mut refused = false;
    for _ in 0..100 {
        if TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(refused);
}

#[test]
fn start_outside_a_runtime_is_an_error() {
    let e = MockLlm::start(Vec::<Step>::new()).unwrap_err();
    assert!(e.to_string().contains("tokio runtime"), "{e}");
}

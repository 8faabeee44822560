//! The Chat Completions client against a real model on a real local
//! server (llama-cpp-python serving SmolLM2-135M-Instruct, started by
//! `gantry_testkit::local_model`). A real model is not deterministic: these
//! check the wire and the client, never what the model says.

use std::time::Duration;

use futures_util::StreamExt;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_llm::{
    ClientConfig, Message, ModelClient, ModelError, ModelEvent, ModelRequest, OutputSchema,
};
use gantry_testkit::local_model::{LocalModel, MODEL};
use gantry_types::ToolSpec;
use serde_json::json;

use crate::common::*;

fn client(server: &LocalModel, tool_choice: Option<&str>) -> OpenAiChatClient {
    let mut config = ClientConfig::new(server.base_url());
    config.tool_choice = tool_choice.map(str::to_owned);
    config.retry = fast_retry(2);
    OpenAiChatClient::new(config).expect("a client")
}

fn shell() -> ToolSpec {
    ToolSpec {
        name: "shell".into(),
        description: "Run a bash command line in the workspace".into(),
        parameters: json!({"type": "object", "properties":
            {"command": {"type": "string"}}, "required": ["command"]}),
    }
}

fn ask(text: &str, tools: Vec<ToolSpec>, max: Option<u32>) -> ModelRequest {
    ModelRequest {
        model: MODEL.into(),
        messages: vec![Message::user(text)].into(),
        tools: tools.into(),
        max_output_tokens: max,
        ..ModelRequest::default()
    }
}

/// Whether the answer was named first, by the model's served name.
fn named_first(events: &[ModelEvent]) -> bool {
    matches!(events.first(), Some(ModelEvent::Response { id: Some(id), model: Some(model) })
        if id.starts_with("chatcmpl-") && model == MODEL)
}

fn finish_of(events: &[ModelEvent]) -> Option<String> {
    events.iter().find_map(|e| match e {
        ModelEvent::Finished { finish_reason } => Some(finish_reason.clone().unwrap_or_default()),
        _ => None,
    })
}

#[tokio::test]
async fn text_streams_in_deltas_and_finishes_for_length_or_stop() {
    let Some(server) = LocalModel::start() else {
        return;
    };
    let (events, error) = run(&client(&server, None), ask("Say hello.", vec![], Some(4))).await;
    assert_eq!(error, None);
    let deltas = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::TextDelta(_)))
        .count();
    assert!(deltas >= 1, "streamed: {events:?}");
    assert!(named_first(&events), "{events:?}");
    assert_eq!(finish_of(&events).as_deref(), Some("length"), "{events:?}");
    // Room to end on its own, sampled greedily (a 135M model sampled at
    // random may ramble past any budget): `stop`.
    let mut request = ask("Reply with one word: yes.", vec![], Some(256));
    request.temperature = Some(0.0);
    let (events, error) = run(&client(&server, None), request).await;
    assert_eq!(error, None);
    assert_eq!(finish_of(&events).as_deref(), Some("stop"), "{events:?}");
}

/// llama-cpp-python knows no `json_schema` response format and refuses
/// it with a 500: a structured turn's request is made again without it.
#[tokio::test]
async fn a_structured_request_is_answered_though_the_server_knows_no_json_schema() {
    let Some(server) = LocalModel::start() else {
        return;
    };
    let mut request = ask("Is water wet? Answer in JSON.", vec![], Some(32));
    request.output_schema = Some(OutputSchema {
        name: "verdict".into(),
        schema: json!({"type": "object", "properties": {"answer": {"type": "string"}}}),
    });
    let (events, error) = run(&client(&server, None), request).await;
    assert_eq!(error, None, "{events:?}");
    assert!(finish_of(&events).is_some(), "{events:?}");
}

#[tokio::test]
async fn a_forced_tool_call_is_assembled_from_the_servers_deltas() {
    let Some(server) = LocalModel::start() else {
        return;
    };
    let request = ask("List the files here.", vec![shell()], Some(64));
    let (events, error) = run(&client(&server, Some("shell")), request).await;
    assert_eq!(error, None, "{events:?}");
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCallDelta {
                name, arguments, ..
            } if name == "shell" => Some(arguments.as_str()),
            _ => None,
        })
        .collect();
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "{events:?}");
    assert_eq!(calls[0].name, "shell");
    assert!(!calls[0].id.is_empty());
    assert!(!streamed.is_empty(), "the arguments came as deltas");
    assert_eq!(
        calls[0].arguments, streamed,
        "the call is its deltas, whole"
    );
    let arguments: serde_json::Value =
        serde_json::from_str(&calls[0].arguments).expect("the arguments are JSON");
    assert!(arguments.is_object(), "{arguments}");
    assert_eq!(finish_of(&events).as_deref(), Some("tool_calls"));
}

#[tokio::test]
async fn what_the_server_cannot_stream_is_asked_again_unstreamed() {
    let Some(server) = LocalModel::start() else {
        return;
    };
    // `auto` streamed: this server answers an empty 200.
    let request = ask("List the files here.", vec![shell()], Some(64));
    let (events, error) = run(&client(&server, Some("auto")), request).await;
    assert_eq!(error, None, "{events:?}");
    let answered = events
        .iter()
        .any(|e| matches!(e, ModelEvent::TextDelta(_) | ModelEvent::ToolCall(_)));
    assert!(answered, "an answer, text or a call: {events:?}");
    assert!(
        named_first(&events),
        "a whole answer is named too: {events:?}"
    );
    // A whole answer carries its usage.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ModelEvent::Usage(u) if u.input_tokens > 0)),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_prompt_over_the_context_window_is_a_clear_error() {
    let Some(server) = LocalModel::start() else {
        return;
    };
    let long = "word ".repeat(9_000);
    let (_, error) = run(&client(&server, None), ask(&long, vec![], Some(8))).await;
    match error {
        Some(ModelError::BadRequest { status: 400, body }) => {
            assert!(body.contains("context_length_exceeded"), "{body}")
        }
        other => panic!("expected the server's refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_dropped_stream_leaves_the_server_answering() {
    let Some(server) = LocalModel::start() else {
        return;
    };
    let c = client(&server, None);
    let mut stream = c.stream(ask("Tell me a long story.", vec![], Some(512)));
    let first = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(event) = stream.next().await {
            if matches!(event, Ok(ModelEvent::TextDelta(_))) {
                return true;
            }
        }
        false
    })
    .await
    .expect("a first delta");
    assert!(first);
    // An interrupt: the stream is dropped, its connection closed.
    drop(stream);
    let (events, error) = run(&c, ask("Say hi.", vec![], Some(4))).await;
    assert_eq!(error, None);
    assert!(finish_of(&events).is_some(), "{events:?}");
}

#[tokio::test]
async fn a_server_that_stops_and_comes_back_is_retried_until_it_answers() {
    let Some(mut server) = LocalModel::start() else {
        return;
    };
    let port = server.port();
    server.kill();
    let mut config = ClientConfig::new(server.base_url());
    config.retry = gantry_llm::RetryPolicy {
        max_retries: 60,
        base_delay: Duration::from_millis(250),
        max_delay: Duration::from_millis(500),
        max_retry_after: Duration::from_secs(5),
    };
    let c = OpenAiChatClient::new(config).expect("a client");
    let asked = tokio::spawn(async move { run(&c, ask("Say hi.", vec![], Some(4))).await });
    // Back on the same port while the request waits between attempts.
    let _again = tokio::task::spawn_blocking(move || LocalModel::start_on(port))
        .await
        .expect("started")
        .expect("installed");
    let (events, error) = asked.await.expect("answered");
    assert_eq!(error, None, "{events:?}");
    assert!(
        events.iter().any(
            |e| matches!(e, ModelEvent::Retrying { reason, .. } if reason.contains("cannot reach"))
        ),
        "the outage was retried: {events:?}"
    );
    assert!(finish_of(&events).is_some());
}

//! Helpers shared by the client tests against the testkit server.

#![allow(dead_code)]

use std::time::Duration;

use futures_util::StreamExt;
use gantry_llm::{
    Message, ModelClient, ModelError, ModelEvent, ModelRequest, RetryPolicy, ToolCall,
};
use gantry_types::Usage;

/// A retry policy with millisecond backoff, so retry tests run fast.
pub(crate) fn fast_retry(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(5),
    }
}

/// A request saying "hello" to `model`.
pub(crate) fn hello(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        messages: vec![Message::user("hello")].into(),
        ..ModelRequest::default()
    }
}

/// Every event until the end, and the error that ended it, if any.
pub(crate) async fn run(
    client: &dyn ModelClient,
    request: ModelRequest,
) -> (Vec<ModelEvent>, Option<ModelError>) {
    let mut stream = client.stream(request);
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(stream.next().await.is_none(), "nothing may follow an error");
                return (events, Some(error));
            }
        }
    }
    (events, None)
}

pub(crate) fn text_of(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

pub(crate) fn reasoning_of(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

pub(crate) fn calls_of(events: &[ModelEvent]) -> Vec<ToolCall> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

pub(crate) fn usage_of(events: &[ModelEvent]) -> Vec<Usage> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Usage(u) => Some(*u),
            _ => None,
        })
        .collect()
}

pub(crate) fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

pub(crate) fn finished(reason: &str) -> ModelEvent {
    ModelEvent::Finished {
        finish_reason: Some(reason.into()),
    }
}

/// The event naming the answer `id` by `model`.
pub(crate) fn response(id: &str, model: &str) -> ModelEvent {
    ModelEvent::Response {
        id: Some(id.into()),
        model: Some(model.into()),
    }
}

/// Every event naming who answered.
pub(crate) fn responses_of(events: &[ModelEvent]) -> Vec<ModelEvent> {
    events
        .iter()
        .filter(|e| matches!(e, ModelEvent::Response { .. }))
        .cloned()
        .collect()
}

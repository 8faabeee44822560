//! The provider wire formats the mock server speaks. Each module turns a
//! scripted [`Reply`](crate::Reply) into the frames of its provider's stream
//! (pure, no I/O); the server picks the module by request path.

pub(crate) mod anthropic;
pub(crate) mod openai_chat;
pub(crate) mod openai_responses;

use serde_json::Value;

use crate::script::Reply;

/// The API a request was made to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// `POST /v1/chat/completions`.
    OpenAiChat,
    /// `POST /v1/responses`.
    OpenAiResponses,
    /// `POST /v1/messages`.
    Anthropic,
}

impl Wire {
    /// The wire a request path belongs to (with or without the `/v1` prefix).
    pub(crate) fn from_path(path: &str) -> Option<Self> {
        let path = path.strip_prefix("/v1").unwrap_or(path);
        match path {
            "/chat/completions" => Some(Wire::OpenAiChat),
            "/responses" => Some(Wire::OpenAiResponses),
            "/messages" => Some(Wire::Anthropic),
            _ => None,
        }
    }
}

/// One thing the SSE body does next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Frame {
    /// A `data: ...` event (JSON, or the invalid text of `malformed_after`).
    Data(String),
    /// An `event: NAME` line followed by `data: ...` (Responses, Anthropic).
    Event {
        /// The SSE event name.
        event: String,
        /// The data line.
        data: String,
    },
    /// Close the connection abruptly.
    Cut,
}

/// Facts about the request a reply answers.
pub(crate) struct Context {
    /// Response id shared by every chunk (`chatcmpl-...`, `resp_...`, `msg_...`).
    pub id: String,
    /// The model the answer names: the reply's, else the request's.
    pub model: String,
    /// Unix seconds.
    pub created: u64,
    /// Number for the first default call id (`call_<n>`).
    pub first_call: usize,
    /// Whether `stream_options.include_usage` was set (Chat Completions only).
    pub include_usage: bool,
    /// Rough size of the prompt, for default usage.
    pub prompt_chars: usize,
    /// The request body, for wire-specific options.
    pub request: Value,
}

/// Splits `text` into pieces of at most `size` characters.
pub(crate) fn split_chars(text: &str, size: usize) -> Vec<String> {
    let size = size.max(1);
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Argument fragments: at most `chunk_size` chars, and at least two fragments
/// whenever possible so clients must really concatenate.
pub(crate) fn split_arguments(args: &str, chunk_size: usize) -> Vec<String> {
    let len = args.chars().count();
    split_chars(args, chunk_size.min(len.div_ceil(2)))
}

/// The frames of a stream's events with the reply's scripted faults placed,
/// counting events from 0: before event `cut_after` the connection is cut;
/// before event `error_after` the wire's `error` frame (given that number) is
/// sent and the body ends; before event `malformed_after` the wire's
/// `malformed` frame (given that event) is inserted. `end` follows the last
/// event when the stream was not cut short (the `[DONE]` of Chat Completions).
pub(crate) fn place_faults(
    reply: &Reply,
    events: Vec<Frame>,
    error: impl FnOnce(usize) -> Frame,
    malformed: impl Fn(&Frame) -> Frame,
    end: Option<Frame>,
) -> Vec<Frame> {
    let mut frames = Vec::with_capacity(events.len() + 2);
    for (sent, event) in events.into_iter().enumerate() {
        if reply.cut_after == Some(sent) {
            frames.push(Frame::Cut);
            return frames;
        }
        if reply.error_after == Some(sent) {
            frames.push(error(sent));
            return frames;
        }
        if reply.malformed_after == Some(sent) {
            frames.push(malformed(&event));
        }
        frames.push(event);
    }
    frames.extend(end);
    frames
}

/// The `event:` frames of a stream with their parsed data (for the wires' tests).
#[cfg(test)]
pub(crate) fn events(frames: &[Frame]) -> Vec<(String, Value)> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Event { event, data } => Some((event.clone(), serde_json::from_str(data).ok()?)),
            _ => None,
        })
        .collect()
}

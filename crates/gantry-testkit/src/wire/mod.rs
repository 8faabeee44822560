//! The provider wire formats the mock server speaks. Each module turns a
//! scripted [`Reply`](crate::Reply) into the frames of its provider's stream
//! (pure, no I/O); the server picks the module by request path.

pub(crate) mod anthropic;
pub(crate) mod openai_chat;
pub(crate) mod openai_responses;

use serde_json::Value;

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
    /// Echoed model name.
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

//! The provider-neutral request and stream every client speaks, and the port.

use std::pin::Pin;

use futures_util::Stream;
use gantry_types::{ImagePart, Usage};

use crate::{History, ModelError, Tools};

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The user's words, and the images sent with them.
    User {
        /// Text.
        text: String,
        /// Images, sent before the text; only to models that read them
        /// (the engine leaves them out, with a note, for others).
        images: Vec<ImagePart>,
    },
    /// An earlier answer of the model: reasoning, text and/or tool calls.
    Assistant {
        /// Its reasoning blocks, in order (sent back where the API wants them).
        reasoning: Vec<ReasoningBlock>,
        /// What it said (may be empty when it only called tools).
        text: String,
        /// The tools it called.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, answered by `call_id`.
    ToolResult {
        /// The call this answers.
        call_id: String,
        /// The result text.
        output: String,
    },
}

impl Message {
    /// A user message of text only.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// One reasoning block of an answer, as the provider needs it back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReasoningBlock {
    /// The visible reasoning text (or its summary).
    pub text: String,
    /// Anthropic `thinking.signature`.
    pub signature: Option<String>,
    /// Opaque data returned unchanged: Anthropic `redacted_thinking.data`,
    /// OpenAI Responses `encrypted_content`.
    pub opaque: Option<String>,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// Provider id of the call; results must echo it.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Raw JSON arguments, exactly as streamed (may be invalid JSON).
    pub arguments: String,
}

/// The JSON Schema a structured answer must match, for a provider that can
/// hold its model to one (Chat Completions' `response_format`). Others
/// ignore it: the agent loop still offers its submission tool and checks
/// every answer itself.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSchema {
    /// A name for the schema (letters, digits, `_` and `-`).
    pub name: String,
    /// An object schema: what providers accept at the root.
    pub schema: serde_json::Value,
}

/// Everything a client needs to make one model request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelRequest {
    /// Model id as the provider knows it.
    pub model: String,
    /// System instructions.
    pub instructions: Option<String>,
    /// The conversation so far. Shared, because the agent loop sends the
    /// same growing history every round and must not copy it (or serialise
    /// it again) each time.
    pub messages: History,
    /// Tools the model may call. Shared, because a turn offers the same
    /// tools every round and must not copy (or serialise) their schemas
    /// each time.
    pub tools: Tools,
    /// Reasoning effort (`low`, `medium`, `high`, ...), if the model supports it.
    pub reasoning: Option<String>,
    /// Cap on generated tokens.
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature; not sent along with a reasoning effort
    /// (reasoning models refuse it).
    pub temperature: Option<f32>,
    /// The schema a structured turn's answer must match, for providers
    /// with native structured output.
    pub output_schema: Option<OutputSchema>,
    /// The W3C `traceparent` header the request carries: the request's
    /// span in the trace of the turn that made it.
    pub trace_parent: Option<String>,
}

/// What a model stream yields, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    /// The request failed in a retryable way and is tried again after `delay_ms`.
    Retrying {
        /// 1 for the first retry.
        attempt: u32,
        /// How long the client waits before the retry.
        delay_ms: u64,
        /// The error that caused it.
        reason: String,
    },
    /// Who answered, as soon as the stream names it: at most once per
    /// answer, before its content where the wire allows.
    Response {
        /// The provider's id of the answer (`chatcmpl-...`, `resp_...`, `msg_...`).
        id: Option<String>,
        /// The model that answered, as the provider names it (often a dated
        /// snapshot of the requested one).
        model: Option<String>,
    },
    /// Answer text.
    TextDelta(String),
    /// Visible reasoning text.
    ReasoningDelta(String),
    /// The reasoning block whose deltas came before is complete; carries what
    /// must be sent back with it. Also sent alone for blocks without text
    /// (redacted thinking, encrypted reasoning).
    ReasoningEnd {
        /// Anthropic `thinking.signature`.
        signature: Option<String>,
        /// Opaque data returned unchanged.
        opaque: Option<String>,
    },
    /// A fragment of a tool call's arguments as they stream, before the
    /// complete [`ModelEvent::ToolCall`]. Only for showing progress (partial
    /// JSON); the complete call is authoritative.
    ToolCallDelta {
        /// Tells the answer's calls apart (the provider's call index).
        index: u64,
        /// The tool's name.
        name: String,
        /// The next piece of the arguments' JSON text.
        arguments: String,
    },
    /// A complete tool call (its argument deltas are assembled by the client).
    ToolCall(ToolCall),
    /// Token usage of the request.
    Usage(Usage),
    /// The answer is complete. Always the last event of a successful stream.
    Finished {
        /// The provider's finish reason (`stop`, `tool_calls`, `length`, ...);
        /// [`REFUSAL`] whenever the model refused, whatever the provider
        /// called it (OpenAI's `content_filter` or `refusal` parts,
        /// Anthropic's `refusal`).
        finish_reason: Option<String>,
    },
}

impl ModelEvent {
    /// The [`ModelEvent::Response`] naming `id` and `model`, if the wire
    /// named either (servers that have no id send an empty one).
    pub(crate) fn response(id: Option<String>, model: Option<String>) -> Option<Self> {
        let id = id.filter(|s| !s.is_empty());
        let model = model.filter(|s| !s.is_empty());
        (id.is_some() || model.is_some()).then_some(ModelEvent::Response { id, model })
    }
}

/// The finish reason of an answer the model refused to give.
pub const REFUSAL: &str = "refusal";

/// A model answer as it streams. Dropping it cancels the request.
pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send>>;

/// The LLM port: one streaming request at a time per call.
pub trait ModelClient: Send + Sync {
    /// Starts a request. The stream connects lazily, retries what the retry
    /// policy allows (yielding [`ModelEvent::Retrying`]), and ends with
    /// [`ModelEvent::Finished`] or an error.
    fn stream(&self, request: ModelRequest) -> ModelStream;
}

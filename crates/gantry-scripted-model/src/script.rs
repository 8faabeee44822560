//! The script: what the mock server answers, one step per request.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A scripted conversation: each request to the server consumes the next step.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The answers, in order.
    pub steps: Vec<Step>,
}

/// One answer of the mock server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// A streamed (or, for `"stream": false` requests, plain) assistant reply.
    Reply(Reply),
    /// An HTTP error answered before any streaming.
    Error(HttpError),
    /// A recorded transcript, streamed byte for byte (real-format fixtures).
    Raw(RawReply),
}

/// A recorded response body, replayed verbatim with a 200 status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReply {
    /// The whole SSE body, `event:`/`data:` lines and blank lines included.
    pub sse: String,
}

/// A scripted assistant reply and how to stream it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Reply {
    /// Answer text.
    pub text: String,
    /// Reasoning text, streamed as `reasoning_content` before the answer.
    pub reasoning: String,
    /// Tool calls, streamed after the text.
    pub tool_calls: Vec<ToolCallSpec>,
    /// Token usage; computed from the lengths when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageSpec>,
    /// Characters per text/reasoning chunk (and the most per argument fragment).
    pub chunk_size: usize,
    /// Milliseconds to sleep before each chunk.
    pub delay_ms: u64,
    /// Close the connection abruptly after this many `data:` events (no `[DONE]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut_after: Option<usize>,
    /// After this many `data:` events, inject a `data: {not json` event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub malformed_after: Option<usize>,
    /// After this many `data:` events, send an in-stream `{"error": ...}` event and stop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_after: Option<usize>,
    /// Overrides the finish reason (default `tool_calls` if there are calls, else `stop`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The model the answer names (default: the request's `model`), as real
    /// APIs name a dated snapshot of the model asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl Default for Reply {
    fn default() -> Self {
        Self {
            text: String::new(),
            reasoning: String::new(),
            tool_calls: Vec::new(),
            usage: None,
            chunk_size: 16,
            delay_ms: 0,
            cut_after: None,
            malformed_after: None,
            error_after: None,
            finish_reason: None,
            model: None,
        }
    }
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    /// Call id; `call_<n>` (n counts calls over the whole script, from 1) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// A JSON object (sent serialized) or a raw string sent verbatim, valid JSON or not.
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

impl ToolCallSpec {
    /// A call of `name` with JSON `arguments` (a string is sent verbatim).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: None,
            name: name.into(),
            arguments,
        }
    }

    /// Sets the call id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The arguments exactly as they are streamed.
    pub fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        }
    }
}

/// Token usage reported in the usage chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UsageSpec {
    /// Prompt tokens (cached included).
    pub prompt_tokens: u64,
    /// Completion tokens (reasoning included).
    pub completion_tokens: u64,
    /// Prompt tokens served from cache.
    pub cached_tokens: u64,
    /// Prompt tokens written to the cache (Anthropic's `cache_creation_input_tokens`).
    pub cache_write_tokens: u64,
    /// Completion tokens spent reasoning.
    pub reasoning_tokens: u64,
}

/// A scripted HTTP error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpError {
    /// HTTP status (401, 429, 500, ...).
    pub status: u16,
    /// Seconds, sent as the `Retry-After` header. Fractions are allowed (Gantry's
    /// client honours them) so tests of the wait need not wait whole seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<f64>,
    /// Response body; an OpenAI-style `{"error": {...}}` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

impl Step {
    /// A reply with this text.
    pub fn text(text: impl Into<String>) -> Self {
        Step::Reply(Reply {
            text: text.into(),
            ..Reply::default()
        })
    }

    /// A reply calling one tool with these arguments.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::tool_calls(vec![ToolCallSpec::new(name, arguments)])
    }

    /// A reply calling several tools in parallel.
    pub fn tool_calls(calls: Vec<ToolCallSpec>) -> Self {
        Step::Reply(Reply {
            tool_calls: calls,
            ..Reply::default()
        })
    }

    /// A recorded SSE transcript, replayed byte for byte.
    pub fn raw_sse(sse: impl Into<String>) -> Self {
        Step::Raw(RawReply { sse: sse.into() })
    }

    /// An HTTP error with the wire's default error body.
    pub fn http_error(status: u16) -> Self {
        Step::Error(HttpError {
            status,
            retry_after: None,
            body: None,
        })
    }

    /// Sets `Retry-After` (seconds) on an error step; no effect on replies.
    pub fn with_retry_after(mut self, seconds: f64) -> Self {
        if let Step::Error(e) = &mut self {
            e.retry_after = Some(seconds);
        }
        self
    }

    /// Sets the body of an error step; no effect on replies.
    pub fn with_body(mut self, body: Value) -> Self {
        if let Step::Error(e) = &mut self {
            e.body = Some(body);
        }
        self
    }

    /// Sets the reasoning text of a reply.
    pub fn with_reasoning(self, reasoning: impl Into<String>) -> Self {
        self.map_reply(|r| r.reasoning = reasoning.into())
    }

    /// Adds answer text to a reply (e.g. text before tool calls).
    pub fn with_text(self, text: impl Into<String>) -> Self {
        self.map_reply(|r| r.text = text.into())
    }

    /// Sets the usage a reply reports.
    pub fn with_usage(self, usage: UsageSpec) -> Self {
        self.map_reply(|r| r.usage = Some(usage))
    }

    /// Sets the characters per chunk of a reply.
    pub fn with_chunk_size(self, chars: usize) -> Self {
        self.map_reply(|r| r.chunk_size = chars)
    }

    /// Sleeps this long before each chunk of a reply.
    pub fn with_delay_ms(self, ms: u64) -> Self {
        self.map_reply(|r| r.delay_ms = ms)
    }

    /// Cuts the connection after `events` data events of a reply.
    pub fn cut_after(self, events: usize) -> Self {
        self.map_reply(|r| r.cut_after = Some(events))
    }

    /// Injects an invalid JSON event after `events` data events of a reply.
    pub fn malformed_after(self, events: usize) -> Self {
        self.map_reply(|r| r.malformed_after = Some(events))
    }

    /// Sends an in-stream error event after `events` data events of a reply.
    pub fn error_after(self, events: usize) -> Self {
        self.map_reply(|r| r.error_after = Some(events))
    }

    /// Overrides the finish reason of a reply.
    pub fn with_finish_reason(self, reason: impl Into<String>) -> Self {
        self.map_reply(|r| r.finish_reason = Some(reason.into()))
    }

    /// Sets the model a reply names as the one that answered.
    pub fn with_model(self, model: impl Into<String>) -> Self {
        self.map_reply(|r| r.model = Some(model.into()))
    }

    fn map_reply(mut self, f: impl FnOnce(&mut Reply)) -> Self {
        if let Step::Reply(r) = &mut self {
            f(r);
        }
        self
    }
}

/// Why a script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read script {path}: {cause}")]
    Read {
        /// The file.
        path: String,
        /// The OS error (in the message, so not a `source`: a chain of
        /// causes would print it twice).
        cause: std::io::Error,
    },
    /// The JSON is invalid or does not follow the script format.
    #[error("invalid script{}: {cause} (expected {{\"steps\": [{{\"reply\": {{...}}}} | {{\"error\": {{...}}}}, ...]}} or a bare array of steps)", .path.as_deref().map(|p| format!(" {p}")).unwrap_or_default())]
    Parse {
        /// The file, when read from one.
        path: Option<String>,
        /// serde_json's message, with line and column (not a `source`,
        /// as above).
        cause: serde_json::Error,
    },
}

impl Script {
    /// A script of these steps.
    pub fn new(steps: impl IntoIterator<Item = Step>) -> Self {
        Self {
            steps: steps.into_iter().collect(),
        }
    }

    /// Parses `{"steps": [...]}` or a bare `[...]` of steps.
    pub fn from_json(json: &str) -> Result<Self, ScriptError> {
        Self::parse(json).map_err(|cause| ScriptError::Parse { path: None, cause })
    }

    /// Reads and parses a script file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let json = std::fs::read_to_string(path).map_err(|cause| ScriptError::Read {
            path: shown.clone(),
            cause,
        })?;
        Self::parse(&json).map_err(|cause| ScriptError::Parse {
            path: Some(shown),
            cause,
        })
    }

    // Dispatching on the first character (rather than an untagged enum)
    // keeps serde_json's precise "line N column M" messages.
    fn parse(json: &str) -> Result<Self, serde_json::Error> {
        if json.trim_start().starts_with('[') {
            Ok(Self {
                steps: serde_json::from_str(json)?,
            })
        } else {
            serde_json::from_str(json)
        }
    }
}

impl From<Vec<Step>> for Script {
    fn from(steps: Vec<Step>) -> Self {
        Self { steps }
    }
}

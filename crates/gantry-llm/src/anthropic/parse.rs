//! Turns Messages SSE events into [`ModelEvent`]s (pure, no I/O).

use std::collections::{BTreeMap, VecDeque};

use gantry_types::Usage;
use serde::Deserialize;
use serde_json::Value;

use crate::http::excerpt;
use crate::sse::{Progress, SseParser};
use crate::{ModelError, ModelEvent, ToolCall};

/// One SSE event, dispatched on its `type` (which repeats the `event:` line).
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: BlockStart,
    },
    ContentBlockDelta {
        index: u64,
        delta: Delta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error {
        error: WireError,
    },
    /// `ping` and event types added after this client was written.
    #[serde(other)]
    Ignored,
}

#[derive(Deserialize)]
struct StartMessage {
    /// The message's id (`msg_...`).
    id: Option<String>,
    /// The model that answered.
    model: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockStart {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    /// Server tools, citations and other blocks the engine has no use for.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "signature_delta")]
    Signature { signature: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    /// `citations_delta` and later additions.
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct MessageDelta {
    stop_reason: Option<String>,
}

/// Usage as sent in `message_start` and (cumulative) in `message_delta`.
#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// A content block being streamed.
enum Block {
    Text,
    Thinking {
        signature: String,
    },
    Redacted {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        json: String,
        /// `json` came from the start event and is replaced by the first fragment.
        from_start: bool,
    },
    Other,
}

/// The state of one streamed message.
#[derive(Default)]
pub(super) struct MessageParser {
    blocks: BTreeMap<u64, Block>,
    input_tokens: u64,
    output_tokens: u64,
    cache_read: u64,
    cache_write: u64,
    stop_reason: Option<String>,
}

impl SseParser for MessageParser {
    /// Handles one SSE event; `message_stop` completes the answer.
    fn on_event(
        &mut self,
        kind: &str,
        data: &str,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Progress, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Progress::More);
        }
        let event: Event = match serde_json::from_str(data) {
            Ok(event) => event,
            // An error event that is not Anthropic's JSON is still an error.
            Err(_) if kind == "error" => {
                return Err(ModelError::Server {
                    status: 500,
                    body: excerpt(data),
                });
            }
            Err(e) => {
                return Err(ModelError::MalformedStream(format!(
                    "{e} in event `{}`",
                    excerpt_short(data)
                )));
            }
        };
        match event {
            Event::MessageStart { message } => {
                out.extend(ModelEvent::response(message.id, message.model));
                if let Some(u) = message.usage {
                    self.add_usage(u);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = self.start_block(content_block, out);
                self.blocks.insert(index, block);
            }
            Event::ContentBlockDelta { index, delta } => self.on_delta(index, delta, out)?,
            Event::ContentBlockStop { index } => {
                if let Some(block) = self.blocks.remove(&index) {
                    stop_block(block, out);
                }
            }
            Event::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(u) = usage {
                    self.add_usage(u);
                }
            }
            Event::MessageStop => {
                // Blocks the server never closed still count.
                for block in std::mem::take(&mut self.blocks).into_values() {
                    stop_block(block, out);
                }
                out.push_back(ModelEvent::Usage(self.usage()));
                // Anthropic's `refusal` is already `crate::REFUSAL`.
                out.push_back(ModelEvent::Finished {
                    finish_reason: self.stop_reason.take(),
                });
                return Ok(Progress::Done);
            }
            Event::Error { error } => return Err(stream_error(error)),
            Event::Ignored => {}
        }
        Ok(Progress::More)
    }

    /// The body ended without `message_stop`: the answer is incomplete.
    fn on_eof(&mut self, _out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        Err(ModelError::StreamCut(
            "connection closed before the answer finished (no message_stop)".into(),
        ))
    }
}

impl MessageParser {
    fn start_block(&mut self, start: BlockStart, out: &mut VecDeque<ModelEvent>) -> Block {
        match start {
            BlockStart::Text { text } => {
                if !text.is_empty() {
                    out.push_back(ModelEvent::TextDelta(text));
                }
                Block::Text
            }
            BlockStart::Thinking {
                thinking,
                signature,
            } => {
                if !thinking.is_empty() {
                    out.push_back(ModelEvent::ReasoningDelta(thinking));
                }
                Block::Thinking { signature }
            }
            BlockStart::RedactedThinking { data } => Block::Redacted { data },
            BlockStart::ToolUse { id, name, input } => {
                // The input is streamed as `input_json_delta`s; a start that
                // already carries a non-empty input is kept in case none come.
                let json = match input {
                    Some(Value::Object(o)) if !o.is_empty() => Value::Object(o).to_string(),
                    _ => String::new(),
                };
                Block::ToolUse {
                    id,
                    name,
                    from_start: !json.is_empty(),
                    json,
                }
            }
            BlockStart::Other => Block::Other,
        }
    }

    fn on_delta(
        &mut self,
        index: u64,
        delta: Delta,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        let Some(block) = self.blocks.get_mut(&index) else {
            return Err(ModelError::MalformedStream(format!(
                "content_block_delta for block {index}, which was never started"
            )));
        };
        match (block, delta) {
            (Block::Text, Delta::Text { text }) if !text.is_empty() => {
                out.push_back(ModelEvent::TextDelta(text));
            }
            (Block::Thinking { .. }, Delta::Thinking { thinking }) if !thinking.is_empty() => {
                out.push_back(ModelEvent::ReasoningDelta(thinking));
            }
            (Block::Thinking { signature }, Delta::Signature { signature: part }) => {
                signature.push_str(&part);
            }
            (
                Block::ToolUse {
                    json,
                    from_start,
                    name,
                    ..
                },
                Delta::InputJson { partial_json },
            ) if !partial_json.is_empty() => {
                if std::mem::take(from_start) {
                    json.clear();
                }
                json.push_str(&partial_json);
                out.push_back(ModelEvent::ToolCallDelta {
                    index,
                    name: name.clone(),
                    arguments: partial_json,
                });
            }
            // Deltas of other kinds (citations, empty fragments) carry nothing to forward.
            _ => {}
        }
        Ok(())
    }

    /// Later usage fields overwrite earlier ones: `message_delta` counts are
    /// cumulative.
    fn add_usage(&mut self, u: WireUsage) {
        if let Some(n) = u.input_tokens {
            self.input_tokens = n;
        }
        if let Some(n) = u.output_tokens {
            self.output_tokens = n;
        }
        if let Some(n) = u.cache_read_input_tokens {
            self.cache_read = n;
        }
        if let Some(n) = u.cache_creation_input_tokens {
            self.cache_write = n;
        }
    }

    /// Gantry's convention: `input_tokens` counts every prompt token, cached
    /// and cache-written ones included (Anthropic reports them apart).
    fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens + self.cache_read + self.cache_write,
            output_tokens: self.output_tokens,
            cached_input_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
            reasoning_tokens: 0,
        }
    }
}

fn stop_block(block: Block, out: &mut VecDeque<ModelEvent>) {
    match block {
        Block::Thinking { signature } => out.push_back(ModelEvent::ReasoningEnd {
            signature: (!signature.is_empty()).then_some(signature),
            opaque: None,
        }),
        Block::Redacted { data } => out.push_back(ModelEvent::ReasoningEnd {
            signature: None,
            opaque: Some(data),
        }),
        Block::ToolUse { id, name, json, .. } => out.push_back(ModelEvent::ToolCall(ToolCall {
            id,
            name,
            // A call without arguments streams no (or only empty) fragments.
            arguments: if json.trim().is_empty() {
                "{}".into()
            } else {
                json
            },
        })),
        Block::Text | Block::Other => {}
    }
}

/// An `error` event: `overloaded_error` is HTTP 529's in-stream twin.
fn stream_error(error: WireError) -> ModelError {
    let status = if error.kind == "overloaded_error" {
        529
    } else {
        500
    };
    let body = match (error.kind.is_empty(), error.message.is_empty()) {
        (true, _) => error.message,
        (false, true) => error.kind,
        (false, false) => format!("{}: {}", error.kind, error.message),
    };
    ModelError::Server {
        status,
        body: excerpt(&body),
    }
}

/// A short excerpt of a bad event, for error messages.
fn excerpt_short(data: &str) -> String {
    match data.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &data[..cut]),
        None => data.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[(&str, &str)]) -> (Vec<ModelEvent>, Result<Progress, ModelError>) {
        let mut p = MessageParser::default();
        let mut out = VecDeque::new();
        let mut last = Ok(Progress::More);
        for (kind, data) in events {
            last = p.on_event(kind, data, &mut out);
            if last.is_err() {
                break;
            }
        }
        (out.into(), last)
    }

    #[test]
    fn interleaved_tool_inputs_are_assembled_per_index() {
        let (events, last) = run(&[
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"x","input":{}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"b","name":"y","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"q\":"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"2}"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":1}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ]);
        assert_eq!(last, Ok(Progress::Done));
        let calls: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCall(c) => Some((c.id.as_str(), c.arguments.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(calls, [("a", "{}"), ("b", r#"{"q":2}"#)]);
        // The fragments also stream as they come, tagged by block index.
        let deltas: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCallDelta {
                    index, arguments, ..
                } => Some((*index, arguments.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, [(1, r#"{"q":"#), (1, "2}")]);
    }

    #[test]
    fn redacted_thinking_ends_with_its_data() {
        let (events, _) = run(&[
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwK"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
        ]);
        assert_eq!(
            events,
            vec![ModelEvent::ReasoningEnd {
                signature: None,
                opaque: Some("EmwK".into())
            }]
        );
    }

    #[test]
    fn unknown_events_and_deltas_are_ignored_bad_ones_fail() {
        let (events, last) = run(&[
            ("ping", r#"{"type":"ping"}"#),
            ("future", r#"{"type":"future_event","x":1}"#),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
            ),
        ]);
        assert_eq!((events, last), (vec![], Ok(Progress::More)));
        let (_, last) = run(&[("content_block_delta", "{not json")]);
        assert!(matches!(last, Err(ModelError::MalformedStream(m)) if m.contains("{not json")));
        let (_, last) = run(&[(
            "content_block_delta",
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#,
        )]);
        assert!(matches!(last, Err(ModelError::MalformedStream(_))));
    }

    #[test]
    fn error_events_are_server_errors() {
        let (_, last) = run(&[(
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )]);
        assert_eq!(
            last,
            Err(ModelError::Server {
                status: 529,
                body: "overloaded_error: Overloaded".into()
            })
        );
        let (_, last) = run(&[("error", "oops")]);
        assert_eq!(
            last,
            Err(ModelError::Server {
                status: 500,
                body: "oops".into()
            })
        );
    }

    #[test]
    fn eof_is_always_a_cut() {
        let mut out = VecDeque::new();
        assert!(matches!(
            MessageParser::default().on_eof(&mut out),
            Err(ModelError::StreamCut(_))
        ));
    }

    #[test]
    fn a_refusal_stop_reason_finishes_as_refusal() {
        let (events, _) = run(&[
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":1}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ]);
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Finished {
                finish_reason: Some(crate::REFUSAL.into())
            })
        );
    }

    #[test]
    fn message_start_names_the_answer_first() {
        let start = r#"{"type":"message_start","message":{"id":"msg_01","type":"message",
            "role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],
            "usage":{"input_tokens":3,"output_tokens":1}}}"#;
        let (events, last) = run(&[
            ("message_start", start),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi"}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ]);
        assert_eq!(last, Ok(Progress::Done));
        assert_eq!(
            events[..2],
            [
                ModelEvent::Response {
                    id: Some("msg_01".into()),
                    model: Some("claude-sonnet-4-5-20250929".into()),
                },
                ModelEvent::TextDelta("Hi".into()),
            ]
        );
        // A server that names nothing says nothing of it.
        let (events, _) = run(&[(
            "message_start",
            r#"{"type":"message_start","message":{"usage":{"input_tokens":3}}}"#,
        )]);
        assert_eq!(events, vec![]);
    }
}

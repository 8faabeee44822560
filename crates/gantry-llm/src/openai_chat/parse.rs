//! Turns Chat Completions SSE events into [`ModelEvent`]s (pure, no I/O).

use std::collections::{BTreeMap, VecDeque};

use gantry_types::Usage;
use serde::Deserialize;
use serde_json::Value;

use crate::http::excerpt;
use crate::sse::{Progress, SseParser};
use crate::{ModelError, ModelEvent, REFUSAL, ToolCall};

#[derive(Deserialize)]
struct Chunk {
    /// The completion's id, repeated on every chunk.
    id: Option<String>,
    /// The model that answered, repeated on every chunk.
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    // OpenRouter and vLLM's newer servers call it `reasoning`.
    reasoning: Option<String>,
    /// What the model says instead of answering, when it refuses.
    refusal: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    index: Option<u32>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    reasoning_tokens: Option<u64>,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The state of one streamed answer.
#[derive(Default)]
pub(super) struct ChunkParser {
    calls: BTreeMap<u32, PartialCall>,
    last_index: Option<u32>,
    finish_reason: Option<String>,
    /// The model refused: a `refusal` delta came.
    refused: bool,
    /// [`ModelEvent::Response`] was emitted (every chunk repeats it).
    named: bool,
}

impl SseParser for ChunkParser {
    /// Handles one SSE event (`kind` is its `event:` field, usually empty).
    fn on_event(
        &mut self,
        kind: &str,
        data: &str,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Progress, ModelError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.finish(out);
            return Ok(Progress::Done);
        }
        if kind == "error" {
            return Err(ModelError::Server {
                status: 500,
                body: excerpt(data),
            });
        }
        if data.is_empty() {
            return Ok(Progress::More);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            ModelError::MalformedStream(format!("{e} in event `{}`", excerpt_short(data)))
        })?;
        if let Some(error) = chunk.error {
            return Err(stream_error(&error));
        }
        if !self.named
            && let Some(named) = ModelEvent::response(chunk.id, chunk.model)
        {
            self.named = true;
            out.push_back(named);
        }
        // Only one choice is ever requested (n = 1).
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                self.on_delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
                self.flush_calls(out);
            }
        }
        if let Some(u) = chunk.usage {
            out.push_back(ModelEvent::Usage(Usage {
                input_tokens: u.prompt_tokens.unwrap_or(0),
                output_tokens: u.completion_tokens.unwrap_or(0),
                cached_input_tokens: u
                    .prompt_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .unwrap_or(0),
                reasoning_tokens: u
                    .completion_tokens_details
                    .and_then(|d| d.reasoning_tokens)
                    .unwrap_or(0),
                ..Usage::default()
            }));
        }
        Ok(Progress::More)
    }

    /// Handles the end of the body: complete if a finish reason came, else cut.
    fn on_eof(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        if self.finish_reason.is_none() {
            return Err(ModelError::StreamCut(
                "connection closed before the answer finished (no finish_reason, no [DONE])".into(),
            ));
        }
        self.finish(out);
        Ok(())
    }

    /// A whole `chat.completion`: its message is read as one delta (its
    /// calls numbered in order), then its usage and finish.
    fn on_whole(&mut self, body: &str, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        let mut whole: Value = serde_json::from_str(body).map_err(|e| {
            ModelError::MalformedStream(format!("{e} in the answer `{}`", excerpt_short(body)))
        })?;
        if let Some(error) = whole.get("error") {
            return Err(stream_error(error));
        }
        let choices = whole.get_mut("choices").and_then(Value::as_array_mut);
        for choice in choices.into_iter().flatten() {
            let Some(choice) = choice.as_object_mut() else {
                continue;
            };
            let Some(mut message) = choice.remove("message") else {
                continue;
            };
            if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
                for (i, call) in calls.iter_mut().enumerate() {
                    if let Some(call) = call.as_object_mut() {
                        call.entry("index").or_insert_with(|| i.into());
                    }
                }
            }
            choice.insert("delta".into(), message);
        }
        self.on_event("", &whole.to_string(), out)?;
        // A whole answer is complete, whatever it says of its finish.
        if self.finish_reason.is_none() {
            self.finish_reason = Some("stop".to_owned());
        }
        self.finish(out);
        Ok(())
    }
}

impl ChunkParser {
    fn on_delta(&mut self, delta: Delta, out: &mut VecDeque<ModelEvent>) {
        if let Some(r) = delta
            .reasoning_content
            .or(delta.reasoning)
            .filter(|r| !r.is_empty())
        {
            out.push_back(ModelEvent::ReasoningDelta(r));
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            out.push_back(ModelEvent::TextDelta(text));
        }
        // The refusal's words are the answer's text; the finish says why.
        if let Some(refusal) = delta.refusal {
            self.refused = true;
            if !refusal.is_empty() {
                out.push_back(ModelEvent::TextDelta(refusal));
            }
        }
        for frag in delta.tool_calls.unwrap_or_default() {
            let index = self.index_of(&frag);
            self.last_index = Some(index);
            let call = self.calls.entry(index).or_default();
            // id and name arrive once, in a call's first fragment; servers that
            // repeat them must not turn `shell` into `shellshell`.
            if let Some(id) = frag.id.filter(|id| !id.is_empty())
                && call.id.is_empty()
            {
                call.id = id;
            }
            if let Some(f) = frag.function {
                if let Some(name) = f.name.filter(|n| !n.is_empty())
                    && call.name.is_empty()
                {
                    call.name = name;
                }
                if let Some(args) = f.arguments.filter(|a| !a.is_empty()) {
                    call.arguments.push_str(&args);
                    out.push_back(ModelEvent::ToolCallDelta {
                        index: u64::from(index),
                        name: call.name.clone(),
                        arguments: args,
                    });
                }
            }
        }
    }

    /// A fragment's call index; servers that omit `index` start a new call
    /// whenever a new id appears.
    fn index_of(&self, frag: &ToolCallDelta) -> u32 {
        if let Some(i) = frag.index {
            return i;
        }
        let next = self.calls.keys().next_back().map_or(0, |i| i + 1);
        match (self.last_index, &frag.id) {
            (Some(last), Some(id)) if self.calls.get(&last).is_some_and(|c| c.id != *id) => next,
            (Some(last), _) => last,
            (None, _) => next,
        }
    }

    fn flush_calls(&mut self, out: &mut VecDeque<ModelEvent>) {
        for (index, call) in std::mem::take(&mut self.calls) {
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            out.push_back(ModelEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments: call.arguments,
            }));
        }
    }

    fn finish(&mut self, out: &mut VecDeque<ModelEvent>) {
        self.flush_calls(out);
        let reason = self.finish_reason.take();
        let refused = self.refused || reason.as_deref() == Some("content_filter");
        out.push_back(ModelEvent::Finished {
            finish_reason: if refused {
                Some(REFUSAL.into())
            } else {
                reason
            },
        });
    }
}

/// A short excerpt of a bad event, for error messages.
fn excerpt_short(data: &str) -> String {
    match data.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &data[..cut]),
        None => data.to_owned(),
    }
}

/// An `{"error": ...}` object sent inside the stream (OpenRouter, vLLM, ...).
fn stream_error(error: &Value) -> ModelError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| error.to_string());
    // OpenRouter puts the upstream HTTP status in `code`.
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(500);
    ModelError::Server {
        status,
        body: excerpt(&message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[&str]) -> (Vec<ModelEvent>, Result<Progress, ModelError>) {
        let mut p = ChunkParser::default();
        let mut out = VecDeque::new();
        let mut last = Ok(Progress::More);
        for e in events {
            last = p.on_event("", e, &mut out);
            if last.is_err() {
                break;
            }
        }
        (out.into(), last)
    }

    #[test]
    fn interleaved_calls_are_assembled_by_index() {
        let (events, last) = run(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"read","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"shell","arguments":"{\"c"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\":1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(last, Ok(Progress::Done));
        let call = |id: &str, name: &str, args: &str| {
            ModelEvent::ToolCall(ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: args.into(),
            })
        };
        let delta = |index: u64, name: &str, args: &str| ModelEvent::ToolCallDelta {
            index,
            name: name.into(),
            arguments: args.into(),
        };
        assert_eq!(
            events,
            vec![
                // Argument fragments stream as they come, tagged by call.
                delta(0, "shell", "{\"c"),
                delta(1, "read", "{}"),
                delta(0, "shell", "\":1}"),
                call("a", "shell", r#"{"c":1}"#),
                call("b", "read", "{}"),
                ModelEvent::Finished {
                    finish_reason: Some("tool_calls".into())
                },
            ]
        );
    }

    #[test]
    fn calls_without_index_are_split_by_id() {
        let (events, _) = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"1"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"2"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":"3"}}]}}]}"#,
            "[DONE]",
        ]);
        let args: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCall(c) => Some((c.id.as_str(), c.arguments.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(args, [("a", "12"), ("b", "3")]);
    }

    #[test]
    fn reasoning_alias_and_empty_content_are_handled() {
        let (events, _) = run(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning":"hmm","content":null}}]}"#,
        ]);
        assert_eq!(events, vec![ModelEvent::ReasoningDelta("hmm".into())]);
    }

    #[test]
    fn in_stream_error_and_bad_json_are_reported() {
        let (_, last) = run(&[r#"{"error":{"message":"overloaded","code":502}}"#]);
        assert_eq!(
            last,
            Err(ModelError::Server {
                status: 502,
                body: "overloaded".into()
            })
        );
        let (_, last) = run(&["{not json"]);
        assert!(matches!(last, Err(ModelError::MalformedStream(m)) if m.contains("{not json")));
    }

    #[test]
    fn eof_after_finish_reason_completes_but_eof_before_is_a_cut() {
        let mut p = ChunkParser::default();
        let mut out = VecDeque::new();
        let finish = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
        p.on_event("", finish, &mut out).unwrap();
        assert_eq!(p.on_eof(&mut out), Ok(()));
        assert_eq!(
            out.back(),
            Some(&ModelEvent::Finished {
                finish_reason: Some("stop".into())
            })
        );
        assert!(matches!(
            ChunkParser::default().on_eof(&mut out),
            Err(ModelError::StreamCut(_))
        ));
    }

    #[test]
    fn refusals_and_content_filter_finish_as_refusal() {
        let (events, _) = run(&[
            r#"{"choices":[{"index":0,"delta":{"refusal":"I can't help with that."}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::TextDelta("I can't help with that.".into()),
                ModelEvent::Finished {
                    finish_reason: Some(REFUSAL.into())
                },
            ]
        );
        let (events, _) = run(&[
            r#"{"choices":[{"index":0,"delta":{"content":"Par"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Finished {
                finish_reason: Some(REFUSAL.into())
            })
        );
    }

    #[test]
    fn the_answer_is_named_once_from_its_first_chunk() {
        let chunk = |rest: &str| {
            format!(r#"{{"id":"chatcmpl-1","model":"gpt-4.1-2025-04-14","choices":[{rest}]}}"#)
        };
        let (events, _) = run(&[
            &chunk(r#"{"index":0,"delta":{"role":"assistant","content":""}}"#),
            &chunk(r#"{"index":0,"delta":{"content":"Hi"}}"#),
            &chunk(r#"{"index":0,"delta":{},"finish_reason":"stop"}"#),
            "[DONE]",
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::Response {
                    id: Some("chatcmpl-1".into()),
                    model: Some("gpt-4.1-2025-04-14".into()),
                },
                ModelEvent::TextDelta("Hi".into()),
                ModelEvent::Finished {
                    finish_reason: Some("stop".into())
                },
            ]
        );
        // An empty id is no id; the model alone still names the answer.
        let (events, _) = run(&[r#"{"id":"","model":"llama","choices":[]}"#]);
        assert_eq!(
            events,
            vec![ModelEvent::Response {
                id: None,
                model: Some("llama".into()),
            }]
        );
    }

    #[test]
    fn a_whole_answer_is_named_before_its_content() {
        let mut out = VecDeque::new();
        let whole = r#"{"id":"chatcmpl-2","object":"chat.completion","model":"m",
            "choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}"#;
        ChunkParser::default().on_whole(whole, &mut out).unwrap();
        assert_eq!(
            Vec::from(out),
            vec![
                ModelEvent::Response {
                    id: Some("chatcmpl-2".into()),
                    model: Some("m".into()),
                },
                ModelEvent::TextDelta("ok".into()),
                ModelEvent::Finished {
                    finish_reason: Some("stop".into())
                },
            ]
        );
    }
}

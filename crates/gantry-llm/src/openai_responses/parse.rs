//! Turns Responses API SSE events into [`ModelEvent`]s (pure, no I/O).
//!
//! The stream is a sequence of typed events (`response.created`, ...,
//! `response.completed`); each output item (reasoning, message, function
//! call) is opened by `response.output_item.added`, streams deltas keyed by
//! its `output_index`, and is closed by `response.output_item.done` carrying
//! the complete item. Unknown event and item types are ignored, so new API
//! features do not break old clients.

use std::collections::{BTreeMap, HashSet, VecDeque};

use gantry_types::Usage;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::opaque;
use crate::http::excerpt;
use crate::sse::{Progress, SseParser};
use crate::{ModelError, ModelEvent, REFUSAL, ToolCall};

/// Just the type, to dispatch on before parsing the rest.
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// `response.output_text.delta`, `response.reasoning_summary_text.delta`,
/// `response.function_call_arguments.delta`, ...
#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    output_index: u64,
    #[serde(default)]
    delta: String,
}

/// `response.reasoning_summary_part.added`.
#[derive(Deserialize)]
struct SummaryPart {
    #[serde(default)]
    output_index: u64,
    #[serde(default)]
    summary_index: u64,
}

/// `response.function_call_arguments.done`.
#[derive(Deserialize)]
struct ArgumentsDone {
    #[serde(default)]
    output_index: u64,
    arguments: Option<String>,
}

/// `response.output_item.added` / `.done`; the item stays raw until its type
/// is known to be one of ours.
#[derive(Deserialize)]
struct ItemEvent {
    #[serde(default)]
    output_index: u64,
    item: Value,
}

/// A message, reasoning or function call output item.
#[derive(Deserialize, Default)]
#[serde(default)]
struct WireItem {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
    encrypted_content: Option<String>,
    summary: Vec<WirePart>,
    content: Vec<WirePart>,
}

/// A `summary_text`, `output_text`, `refusal` or `reasoning_text` part.
#[derive(Deserialize, Default)]
#[serde(default)]
struct WirePart {
    text: Option<String>,
    refusal: Option<String>,
}

/// `response.completed` / `.incomplete` / `.failed`.
#[derive(Deserialize)]
struct ResponseEvent {
    response: WireResponse,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireResponse {
    id: Option<String>,
    model: Option<String>,
    usage: Option<WireUsage>,
    incomplete_details: Option<IncompleteDetails>,
    error: Option<Value>,
    output: Vec<Value>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    input_tokens_details: Option<InputDetails>,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct OutputDetails {
    reasoning_tokens: Option<u64>,
}

/// An output item between `added` and `done`.
enum Open {
    /// Reasoning: whether any text was streamed, and summary parts seen.
    Reasoning { streamed: bool, parts: u64 },
    /// A message: whether any text was streamed.
    Message { streamed: bool },
    /// A function call being assembled.
    Call(ToolCall),
}

/// The state of one streamed response.
#[derive(Default)]
pub(super) struct EventParser {
    /// Open output items by `output_index` (parallel calls stay apart).
    open: BTreeMap<u64, Open>,
    /// Call ids already emitted, so the final `output` list adds only missed ones.
    emitted: HashSet<String>,
    /// Set once the terminal event came.
    done: bool,
    /// The model refused: a `refusal` part or delta came.
    refused: bool,
    /// [`ModelEvent::Response`] was emitted (the lifecycle events repeat it).
    named: bool,
}

impl SseParser for EventParser {
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
        let head: Head = parse(data)?;
        // The JSON `type` is authoritative; the `event:` line is the fallback
        // for servers that only send one of them.
        let kind = head.kind.as_deref().unwrap_or(kind);
        match kind {
            // Only who answers is read here: the rest comes again, complete,
            // with the terminal event.
            "response.created" | "response.in_progress" => {
                let e: Value = parse(data)?;
                let field = |name: &str| e["response"][name].as_str().map(str::to_owned);
                self.name(field("id"), field("model"), out);
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let d: Delta = parse(data)?;
                self.refused |= kind == "response.refusal.delta";
                // Entered even without `output_item.added`, so `done` does
                // not repeat text that was already streamed.
                let open = self.open.entry(d.output_index);
                if let Open::Message { streamed } =
                    open.or_insert(Open::Message { streamed: false })
                {
                    *streamed = true;
                }
                if !d.delta.is_empty() {
                    out.push_back(ModelEvent::TextDelta(d.delta));
                }
            }
            "response.reasoning_summary_part.added" => {
                let p: SummaryPart = parse(data)?;
                if let Some(Open::Reasoning { streamed, parts }) =
                    self.open.get_mut(&p.output_index)
                {
                    // Summary parts are paragraphs; keep them apart in the one text.
                    if *parts > 0 && *streamed && p.summary_index > 0 {
                        out.push_back(ModelEvent::ReasoningDelta("\n\n".into()));
                    }
                    *parts += 1;
                }
            }
            // `reasoning_text` is the raw reasoning some servers (gpt-oss) stream.
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let d: Delta = parse(data)?;
                let open = self.open.entry(d.output_index).or_insert(Open::Reasoning {
                    streamed: false,
                    parts: 0,
                });
                if let Open::Reasoning { streamed, .. } = open {
                    *streamed = true;
                }
                if !d.delta.is_empty() {
                    out.push_back(ModelEvent::ReasoningDelta(d.delta));
                }
            }
            "response.function_call_arguments.delta" => {
                let d: Delta = parse(data)?;
                let open = self.open.entry(d.output_index);
                if let Open::Call(call) = open.or_insert_with(|| Open::Call(empty_call()))
                    && !d.delta.is_empty()
                {
                    call.arguments.push_str(&d.delta);
                    out.push_back(ModelEvent::ToolCallDelta {
                        index: d.output_index,
                        name: call.name.clone(),
                        arguments: d.delta,
                    });
                }
            }
            "response.function_call_arguments.done" => {
                let d: ArgumentsDone = parse(data)?;
                if let (Some(Open::Call(call)), Some(args)) =
                    (self.open.get_mut(&d.output_index), d.arguments)
                {
                    call.arguments = args;
                }
            }
            "response.output_item.added" => {
                let e: ItemEvent = parse(data)?;
                if let Some(open) = open_item(e.item)? {
                    self.open.insert(e.output_index, open);
                }
            }
            "response.output_item.done" => {
                let e: ItemEvent = parse(data)?;
                let open = self.open.remove(&e.output_index);
                self.close_item(open, e.item, out)?;
            }
            "response.completed" | "response.incomplete" => {
                let mut e: ResponseEvent = parse(data)?;
                // For a server that sent no `response.created`.
                self.name(e.response.id.take(), e.response.model.take(), out);
                self.finish(kind == "response.incomplete", e.response, out)?;
                return Ok(Progress::Done);
            }
            "response.failed" => {
                let e: ResponseEvent = parse(data)?;
                let error = e.response.error.unwrap_or(Value::Null);
                return Err(server_error(&error, "response failed"));
            }
            "error" => {
                let error: Value = parse(data)?;
                // Documented flat (`message`, `code`); older servers nest it in `error`.
                let error = match error.get("error") {
                    Some(inner) if inner.is_object() => inner.clone(),
                    _ => error,
                };
                return Err(server_error(&error, "error event"));
            }
            _ => {}
        }
        Ok(Progress::More)
    }

    fn on_eof(&mut self, _out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        Err(ModelError::StreamCut(
            "connection closed before response.completed".into(),
        ))
    }
}

impl EventParser {
    /// Emits who answered, the first time the stream names it.
    fn name(&mut self, id: Option<String>, model: Option<String>, out: &mut VecDeque<ModelEvent>) {
        if !self.named
            && let Some(named) = ModelEvent::response(id, model)
        {
            self.named = true;
            out.push_back(named);
        }
    }

    /// Emits what a finished output item completes: the reasoning block's
    /// end (with its encrypted content), a function call, or the text of a
    /// message whose deltas never came.
    fn close_item(
        &mut self,
        open: Option<Open>,
        item: Value,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        let Some(item) = known_item(item)? else {
            return Ok(());
        };
        match item.kind.as_str() {
            "reasoning" => {
                if !matches!(open, Some(Open::Reasoning { streamed: true, .. })) {
                    let text = joined(&item.summary, "\n\n");
                    if !text.is_empty() {
                        out.push_back(ModelEvent::ReasoningDelta(text));
                    }
                }
                let opaque = item
                    .encrypted_content
                    .as_deref()
                    .map(|enc| opaque::encode(item.id.as_deref(), enc));
                out.push_back(ModelEvent::ReasoningEnd {
                    signature: None,
                    opaque,
                });
            }
            "message" if !matches!(open, Some(Open::Message { streamed: true })) => {
                self.refused |= item.content.iter().any(|p| p.refusal.is_some());
                let text = joined(&item.content, "");
                if !text.is_empty() {
                    out.push_back(ModelEvent::TextDelta(text));
                }
            }
            "function_call" => {
                let streamed = match open {
                    Some(Open::Call(call)) => Some(call),
                    _ => None,
                };
                self.emit_call(call_of(item, streamed), out);
            }
            _ => {}
        }
        Ok(())
    }

    fn emit_call(&mut self, call: ToolCall, out: &mut VecDeque<ModelEvent>) {
        self.emitted.insert(call.id.clone());
        out.push_back(ModelEvent::ToolCall(call));
    }

    /// The terminal event: calls never closed, usage, then `Finished`.
    fn finish(
        &mut self,
        incomplete: bool,
        response: WireResponse,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        // A well-behaved server closed every item already; a lax one may
        // only list them in the final `output`.
        for open in std::mem::take(&mut self.open).into_values() {
            if let Open::Call(call) = open
                && !self.emitted.contains(&call.id)
            {
                self.emit_call(call, out);
            }
        }
        for item in response.output {
            if let Some(item) = known_item(item)?
                && item.kind == "function_call"
                && !item
                    .call_id
                    .as_ref()
                    .is_some_and(|id| self.emitted.contains(id))
            {
                self.emit_call(call_of(item, None), out);
            }
        }
        if let Some(u) = response.usage {
            out.push_back(ModelEvent::Usage(Usage {
                input_tokens: u.input_tokens.unwrap_or(0),
                output_tokens: u.output_tokens.unwrap_or(0),
                cached_input_tokens: u
                    .input_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .unwrap_or(0),
                reasoning_tokens: u
                    .output_tokens_details
                    .and_then(|d| d.reasoning_tokens)
                    .unwrap_or(0),
                ..Usage::default()
            }));
        }
        let reason = if self.refused {
            REFUSAL.into()
        } else if incomplete {
            match response.incomplete_details.and_then(|d| d.reason) {
                Some(reason) if reason == "content_filter" => REFUSAL.into(),
                Some(reason) => reason,
                None => "incomplete".into(),
            }
        } else if self.emitted.is_empty() {
            "stop".into()
        } else {
            "tool_calls".into()
        };
        out.push_back(ModelEvent::Finished {
            finish_reason: Some(reason),
        });
        self.done = true;
        Ok(())
    }
}

/// The state to keep for a newly added item, if it is a type we stream.
fn open_item(item: Value) -> Result<Option<Open>, ModelError> {
    let Some(item) = known_item(item)? else {
        return Ok(None);
    };
    Ok(match item.kind.as_str() {
        "reasoning" => Some(Open::Reasoning {
            streamed: false,
            parts: 0,
        }),
        "message" => Some(Open::Message { streamed: false }),
        "function_call" => Some(Open::Call(call_of(item, None))),
        _ => None,
    })
}

/// Parses `item` if it is a message, reasoning or function call; other item
/// types (web search, MCP, ...) may have any shape and are skipped.
fn known_item(item: Value) -> Result<Option<WireItem>, ModelError> {
    match item.get("type").and_then(Value::as_str) {
        Some("message" | "reasoning" | "function_call") => serde_json::from_value(item)
            .map(Some)
            .map_err(|e| ModelError::MalformedStream(format!("bad output item: {e}"))),
        _ => Ok(None),
    }
}

/// The complete call of a finished `function_call` item; its final
/// `arguments` win over the streamed ones, which fill in when it has none.
fn call_of(item: WireItem, streamed: Option<ToolCall>) -> ToolCall {
    let streamed = streamed.unwrap_or_else(empty_call);
    let pick =
        |v: Option<String>, fallback: String| v.filter(|s| !s.is_empty()).unwrap_or(fallback);
    ToolCall {
        // Results are matched by `call_id`; `id` (`fc_...`) names the item.
        id: pick(item.call_id, streamed.id),
        name: pick(item.name, streamed.name),
        arguments: pick(item.arguments, streamed.arguments),
    }
}

fn empty_call() -> ToolCall {
    ToolCall {
        id: String::new(),
        name: String::new(),
        arguments: String::new(),
    }
}

/// The text of a list of parts.
fn joined(parts: &[WirePart], separator: &str) -> String {
    parts
        .iter()
        .filter_map(|p| p.text.as_deref().or(p.refusal.as_deref()))
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(separator)
}

fn parse<T: DeserializeOwned>(data: &str) -> Result<T, ModelError> {
    serde_json::from_str(data)
        .map_err(|e| ModelError::MalformedStream(format!("{e} in event `{}`", excerpt_short(data))))
}

/// A short excerpt of a bad event, for error messages.
fn excerpt_short(data: &str) -> String {
    match data.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &data[..cut]),
        None => data.to_owned(),
    }
}

/// An error object (`{"code", "message"}`) as a server error: the stream
/// carries no HTTP status, so it is reported as 500.
fn server_error(error: &Value, what: &str) -> ModelError {
    let message = error.get("message").and_then(Value::as_str);
    let code = match error.get("code") {
        Some(Value::String(c)) => Some(c.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let body = match (message, code) {
        (Some(m), Some(c)) => format!("{m} ({c})"),
        (Some(m), None) => m.to_owned(),
        (None, Some(c)) => format!("{what}: {c}"),
        (None, None) if error.is_null() => what.to_owned(),
        (None, None) => error.to_string(),
    };
    ModelError::Server {
        status: 500,
        body: excerpt(&body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(events: &[Value]) -> (Vec<ModelEvent>, Result<Progress, ModelError>) {
        let mut p = EventParser::default();
        let mut out = VecDeque::new();
        let mut last = Ok(Progress::More);
        for e in events {
            last = p.on_event("", &e.to_string(), &mut out);
            if last.is_err() {
                break;
            }
        }
        (out.into(), last)
    }

    fn completed() -> Value {
        json!({"type": "response.completed", "response": {"status": "completed", "output": []}})
    }

    #[test]
    fn interleaved_calls_are_assembled_by_output_index() {
        let added = |i: u64, call: &str, name: &str| {
            json!({"type": "response.output_item.added", "output_index": i,
                   "item": {"type": "function_call", "id": format!("fc_{i}"), "call_id": call,
                            "name": name, "arguments": ""}})
        };
        let delta = |i: u64, d: &str| json!({"type": "response.function_call_arguments.delta", "output_index": i, "delta": d});
        let done = |i: u64| {
            json!({"type": "response.output_item.done", "output_index": i,
                   "item": {"type": "function_call", "id": format!("fc_{i}")}})
        };
        let (events, last) = run(&[
            added(0, "call_a", "shell"),
            added(1, "call_b", "read"),
            delta(1, "{}"),
            delta(0, "{\"c"),
            delta(0, "\":1}"),
            done(1),
            done(0),
            completed(),
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
                delta(1, "read", "{}"),
                delta(0, "shell", "{\"c"),
                delta(0, "shell", "\":1}"),
                call("call_b", "read", "{}"),
                call("call_a", "shell", r#"{"c":1}"#),
                ModelEvent::Finished {
                    finish_reason: Some("tool_calls".into())
                },
            ]
        );
    }

    #[test]
    fn items_only_listed_at_the_end_are_not_lost() {
        let (events, _) = run(&[
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]}}),
            json!({"type": "response.completed", "response": {"output": [
                {"type": "function_call", "call_id": "c9", "name": "x", "arguments": "{}"}
            ]}}),
        ]);
        assert_eq!(events[0], ModelEvent::TextDelta("Hi".into()));
        assert!(matches!(&events[1], ModelEvent::ToolCall(c) if c.id == "c9"));
    }

    #[test]
    fn unknown_events_and_items_are_ignored() {
        let (events, last) = run(&[
            json!({"type": "response.web_search_call.searching", "item_id": "ws_1", "delta": {"odd": 1}}),
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"type": "web_search_call", "content": 7}}),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"type": "web_search_call", "summary": "x"}}),
            json!({"type": "keepalive"}),
            completed(),
        ]);
        assert_eq!(last, Ok(Progress::Done));
        assert_eq!(
            events,
            vec![ModelEvent::Finished {
                finish_reason: Some("stop".into())
            }]
        );
    }

    #[test]
    fn reasoning_without_encrypted_content_ends_without_opaque() {
        let (events, _) = run(&[
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "One."}),
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 1}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "Two."}),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::ReasoningDelta("One.".into()),
                ModelEvent::ReasoningDelta("\n\n".into()),
                ModelEvent::ReasoningDelta("Two.".into()),
                ModelEvent::ReasoningEnd {
                    signature: None,
                    opaque: None
                },
            ]
        );
    }

    #[test]
    fn incomplete_reports_its_reason_after_usage() {
        let (events, last) = run(&[json!({"type": "response.incomplete", "response": {
            "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "usage": {"input_tokens": 5, "output_tokens": 16}}})]);
        assert_eq!(last, Ok(Progress::Done));
        assert!(matches!(
            events[0],
            ModelEvent::Usage(Usage {
                output_tokens: 16,
                ..
            })
        ));
        assert_eq!(
            events[1],
            ModelEvent::Finished {
                finish_reason: Some("max_output_tokens".into())
            }
        );
    }

    #[test]
    fn errors_failures_and_bad_json_are_reported() {
        let (_, last) = run(&[json!({"type": "error", "code": "server_error",
                                     "message": "The server had an error", "param": null})]);
        assert_eq!(
            last,
            Err(ModelError::Server {
                status: 500,
                body: "The server had an error (server_error)".into()
            })
        );
        let (_, last) = run(&[json!({"type": "response.failed", "response": {
            "status": "failed", "error": {"code": "rate_limit_exceeded", "message": "Slow down"}}})]);
        assert!(
            matches!(last, Err(ModelError::Server { body, .. }) if body == "Slow down (rate_limit_exceeded)")
        );
        let mut p = EventParser::default();
        let bad = p.on_event(
            "response.output_text.delta",
            "{not json",
            &mut VecDeque::new(),
        );
        assert!(matches!(bad, Err(ModelError::MalformedStream(m)) if m.contains("{not json")));
    }

    #[test]
    fn eof_before_completion_is_a_cut() {
        let mut out = VecDeque::new();
        assert!(matches!(
            EventParser::default().on_eof(&mut out),
            Err(ModelError::StreamCut(_))
        ));
        let mut p = EventParser::default();
        assert_eq!(
            p.on_event("", &completed().to_string(), &mut out),
            Ok(Progress::Done)
        );
        assert_eq!(p.on_eof(&mut out), Ok(()));
    }

    #[test]
    fn a_refusal_finishes_as_refusal() {
        let (events, _) = run(&[
            json!({"type": "response.refusal.delta", "output_index": 0, "delta": "No."}),
            completed(),
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::TextDelta("No.".into()),
                ModelEvent::Finished {
                    finish_reason: Some(REFUSAL.into())
                },
            ]
        );
        let (events, _) = run(&[json!({"type": "response.incomplete", "response": {
            "status": "incomplete", "incomplete_details": {"reason": "content_filter"}, "output": []}})]);
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Finished {
                finish_reason: Some(REFUSAL.into())
            })
        );
    }

    #[test]
    fn the_answer_is_named_once_from_response_created() {
        let lifecycle = |kind: &str| {
            json!({"type": kind, "response": {"id": "resp_1", "model": "gpt-5-2025-08-07",
                                              "status": "in_progress", "output": []}})
        };
        let (events, _) = run(&[
            lifecycle("response.created"),
            lifecycle("response.in_progress"),
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hi"}),
            json!({"type": "response.completed", "response": {"id": "resp_1",
                   "model": "gpt-5-2025-08-07", "status": "completed", "output": []}}),
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::Response {
                    id: Some("resp_1".into()),
                    model: Some("gpt-5-2025-08-07".into()),
                },
                ModelEvent::TextDelta("Hi".into()),
                ModelEvent::Finished {
                    finish_reason: Some("stop".into())
                },
            ]
        );
    }

    #[test]
    fn a_stream_without_response_created_is_named_by_its_end() {
        let (events, _) = run(&[
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hi"}),
            json!({"type": "response.completed", "response": {"id": "resp_2",
                   "model": "m", "output": []}}),
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::TextDelta("Hi".into()),
                ModelEvent::Response {
                    id: Some("resp_2".into()),
                    model: Some("m".into()),
                },
                ModelEvent::Finished {
                    finish_reason: Some("stop".into())
                },
            ]
        );
    }
}

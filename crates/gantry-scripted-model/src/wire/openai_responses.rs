//! OpenAI Responses API: a scripted reply as the exact SSE events of
//! `POST /v1/responses` with `stream: true` (pure, no I/O).
//!
//! Order, as the API sends it: `response.created`, `response.in_progress`;
//! then one output item per part of the reply, each opened by
//! `response.output_item.added` and closed by `response.output_item.done`:
//! a reasoning item (summary part added, summary text deltas, text done, part
//! done), a message (content part added, output text deltas, text done, part
//! done), and one function call per tool call (argument deltas, arguments
//! done); finally `response.completed` (or `response.incomplete` when the
//! script's finish reason is neither `stop` nor `tool_calls`) with the whole
//! response and its usage. Every data object carries `type` and
//! `sequence_number`. The reasoning item carries a fake, deterministic
//! `encrypted_content` only when the request asked for
//! `include: ["reasoning.encrypted_content"]`, like the real API.

use serde_json::{Value, json};

use super::openai_chat::usage;
use super::{Context, Frame, place_faults, split_arguments, split_chars};
use crate::script::{Reply, UsageSpec};

/// One event before sequence numbering: its type and its data object.
type Event = (&'static str, Value);

/// The frames of a streamed response.
pub(crate) fn stream_frames(reply: &Reply, ctx: &Context) -> Vec<Frame> {
    let mut b = Builder {
        ctx,
        tag: ctx
            .id
            .trim_start_matches("resp")
            .trim_start_matches(['-', '_'])
            .replace('-', "_"),
        events: Vec::new(),
        output: Vec::new(),
    };
    let head = b.response("in_progress", None, None);
    b.push("response.created", json!({"response": head.clone()}));
    b.push("response.in_progress", json!({"response": head}));
    if !reply.reasoning.is_empty() {
        b.reasoning(reply);
    }
    if !reply.text.is_empty() {
        b.message(reply);
    }
    for (i, call) in reply.tool_calls.iter().enumerate() {
        let call_id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("call_{}", ctx.first_call + i));
        b.function_call(
            &call_id,
            &call.name,
            &call.arguments_text(),
            reply.chunk_size,
        );
    }
    let usage = usage_json(usage(reply, ctx));
    match incomplete_reason(reply) {
        None => {
            let done = b.response("completed", None, Some(usage));
            b.push("response.completed", json!({"response": done}));
        }
        Some(reason) => {
            let done = b.response("incomplete", Some(&reason), Some(usage));
            b.push("response.incomplete", json!({"response": done}));
        }
    }
    frames(b.events, reply)
}

/// Numbers the events and applies the scripted cut, malformed event and error.
fn frames(events: Vec<Event>, reply: &Reply) -> Vec<Frame> {
    let events = events
        .into_iter()
        .enumerate()
        .map(|(sequence_number, (kind, mut data))| {
            data["type"] = kind.into();
            data["sequence_number"] = sequence_number.into();
            Frame::Event {
                event: kind.into(),
                data: data.to_string(),
            }
        })
        .collect();
    let error = |sent: usize| {
        let error = json!({
            "type": "error", "code": "server_error",
            "message": "gantry-scripted-model: scripted stream error",
            "param": null, "sequence_number": sent,
        });
        Frame::Event {
            event: "error".into(),
            data: error.to_string(),
        }
    };
    // A corrupted data line under a valid event name: clients must not trust
    // the name alone.
    let malformed = |event: &Frame| match event {
        Frame::Event { event, .. } => Frame::Event {
            event: event.clone(),
            data: "{not json".into(),
        },
        other => other.clone(),
    };
    place_faults(reply, events, error, malformed, None)
}

/// Builds the events of one response in order.
struct Builder<'a> {
    ctx: &'a Context,
    /// Unique part of the response id, reused in the item ids.
    tag: String,
    events: Vec<Event>,
    /// Finished output items, for the final response object.
    output: Vec<Value>,
}

impl Builder<'_> {
    fn push(&mut self, kind: &'static str, data: Value) {
        self.events.push((kind, data));
    }

    fn item_id(&self, prefix: &str) -> String {
        format!("{prefix}_{}_{}", self.tag, self.output.len())
    }

    fn added(&mut self, item: Value) {
        let output_index = self.output.len();
        self.push(
            "response.output_item.added",
            json!({"output_index": output_index, "item": item}),
        );
    }

    fn done(&mut self, item: Value) {
        let output_index = self.output.len();
        self.push(
            "response.output_item.done",
            json!({"output_index": output_index, "item": item.clone()}),
        );
        self.output.push(item);
    }

    fn reasoning(&mut self, reply: &Reply) {
        let id = self.item_id("rs");
        let index = self.output.len();
        let text = &reply.reasoning;
        let wants_encrypted = self.ctx.request["include"]
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v == "reasoning.encrypted_content"));
        let encrypted = wants_encrypted.then(|| encrypted_content(&id, text));
        let mut item = json!({"id": id, "type": "reasoning", "summary": []});
        if let Some(enc) = &encrypted {
            item["encrypted_content"] = enc.clone().into();
        }
        self.added(item.clone());
        let part = |text: &str| json!({"type": "summary_text", "text": text});
        let at = json!({"item_id": id, "output_index": index, "summary_index": 0});
        self.push(
            "response.reasoning_summary_part.added",
            with(&at, json!({"part": part("")})),
        );
        for piece in split_chars(text, reply.chunk_size) {
            self.push(
                "response.reasoning_summary_text.delta",
                with(&at, json!({"delta": piece})),
            );
        }
        self.push(
            "response.reasoning_summary_text.done",
            with(&at, json!({"text": text})),
        );
        self.push(
            "response.reasoning_summary_part.done",
            with(&at, json!({"part": part(text)})),
        );
        item["summary"] = json!([part(text)]);
        self.done(item);
    }

    fn message(&mut self, reply: &Reply) {
        let id = self.item_id("msg");
        let index = self.output.len();
        let text = &reply.text;
        let item = |status: &str, content: Value| {
            json!({"id": id, "type": "message", "status": status, "content": content,
                   "role": "assistant"})
        };
        let part = |text: &str| json!({"type": "output_text", "annotations": [], "logprobs": [], "text": text});
        self.added(item("in_progress", json!([])));
        let at = json!({"item_id": id, "output_index": index, "content_index": 0});
        self.push(
            "response.content_part.added",
            with(&at, json!({"part": part("")})),
        );
        for piece in split_chars(text, reply.chunk_size) {
            self.push(
                "response.output_text.delta",
                with(&at, json!({"delta": piece, "logprobs": []})),
            );
        }
        self.push(
            "response.output_text.done",
            with(&at, json!({"text": text, "logprobs": []})),
        );
        self.push(
            "response.content_part.done",
            with(&at, json!({"part": part(text)})),
        );
        self.done(item("completed", json!([part(text)])));
    }

    fn function_call(&mut self, call_id: &str, name: &str, arguments: &str, chunk_size: usize) {
        let id = self.item_id("fc");
        let index = self.output.len();
        let item = |status: &str, arguments: &str| {
            json!({"id": id, "type": "function_call", "status": status,
                   "arguments": arguments, "call_id": call_id, "name": name})
        };
        self.added(item("in_progress", ""));
        let at = json!({"item_id": id, "output_index": index});
        for piece in split_arguments(arguments, chunk_size) {
            self.push(
                "response.function_call_arguments.delta",
                with(&at, json!({"delta": piece})),
            );
        }
        self.push(
            "response.function_call_arguments.done",
            with(&at, json!({"arguments": arguments})),
        );
        self.done(item("completed", arguments));
    }

    /// The `response` object of the lifecycle events, echoing the request.
    fn response(&self, status: &str, incomplete: Option<&str>, usage: Option<Value>) -> Value {
        let req = &self.ctx.request;
        json!({
            "id": self.ctx.id,
            "object": "response",
            "created_at": self.ctx.created,
            "status": status,
            "background": false,
            "error": null,
            "incomplete_details": incomplete.map(|r| json!({"reason": r})),
            "instructions": req["instructions"].clone(),
            "max_output_tokens": req["max_output_tokens"].clone(),
            "max_tool_calls": null,
            "model": self.ctx.model,
            "output": if status == "in_progress" { Vec::new() } else { self.output.clone() },
            "parallel_tool_calls": true,
            "previous_response_id": null,
            "prompt_cache_key": null,
            "reasoning": {
                "effort": req["reasoning"]["effort"].clone(),
                "summary": req["reasoning"]["summary"].clone(),
            },
            "safety_identifier": null,
            "service_tier": "default",
            "store": req["store"].as_bool().unwrap_or(true),
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": req["tools"].as_array().cloned().unwrap_or_default(),
            "top_logprobs": 0,
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage,
            "user": null,
            "metadata": {},
        })
    }
}

/// `base` with the fields of `extra` added.
fn with(base: &Value, extra: Value) -> Value {
    let mut v = base.clone();
    if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
        v.extend(extra);
    }
    v
}

/// The `incomplete_details.reason` a scripted finish reason stands for, if
/// the response is not complete (`length` is Chat Completions' name for it).
fn incomplete_reason(reply: &Reply) -> Option<String> {
    match reply.finish_reason.as_deref() {
        None | Some("stop" | "tool_calls") => None,
        Some("length") => Some("max_output_tokens".into()),
        Some(other) => Some(other.into()),
    }
}

fn usage_json(u: UsageSpec) -> Value {
    json!({
        "input_tokens": u.prompt_tokens,
        "input_tokens_details": {"cached_tokens": u.cached_tokens},
        "output_tokens": u.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    })
}

/// A fake `encrypted_content`, the same for the same item and text, so tests
/// can check it is sent back unchanged.
fn encrypted_content(item_id: &str, text: &str) -> String {
    // FNV-1a: stable across runs and platforms, unlike std's hasher.
    let hash = item_id
        .bytes()
        .chain(text.bytes())
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("gAAAAABgantry-{item_id}-{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::ToolCallSpec;
    use crate::wire::events;

    fn ctx(request: Value) -> Context {
        Context {
            id: "resp-gantry-1".into(),
            model: "m".into(),
            created: 0,
            first_call: 1,
            include_usage: false,
            prompt_chars: 40,
            request,
        }
    }

    #[test]
    fn full_reply_follows_the_documented_order() {
        let reply = Reply {
            reasoning: "Think.".into(),
            text: "Hi!".into(),
            tool_calls: vec![ToolCallSpec::new("shell", json!({"cmd": "ls"}))],
            chunk_size: 4,
            ..Reply::default()
        };
        let request = json!({"include": ["reasoning.encrypted_content"], "store": false});
        let evs = events(&stream_frames(&reply, &ctx(request)));
        let kinds: Vec<&str> = evs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.reasoning_summary_part.added",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_text.done",
                "response.reasoning_summary_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        for (i, (kind, data)) in evs.iter().enumerate() {
            assert_eq!(data["type"], *kind);
            assert_eq!(data["sequence_number"], i);
        }
        let rs = &evs[8].1["item"];
        assert_eq!(rs["id"], "rs_gantry_1_0");
        assert!(
            rs["encrypted_content"]
                .as_str()
                .unwrap()
                .starts_with("gAAAA")
        );
        assert_eq!(rs["summary"][0]["text"], "Think.");
        let fc = &evs[20].1;
        assert_eq!(fc["output_index"], 2);
        assert_eq!(fc["item"]["call_id"], "call_1");
        assert_eq!(fc["item"]["arguments"], r#"{"cmd":"ls"}"#);
        let done = &evs[21].1["response"];
        assert_eq!(done["status"], "completed");
        assert_eq!(done["store"], false);
        assert_eq!(done["output"].as_array().unwrap().len(), 3);
        assert!(done["usage"]["output_tokens"].as_u64().unwrap() > 0);
    }

    #[test]
    fn encrypted_content_only_when_included() {
        let reply = Reply {
            reasoning: "Think.".into(),
            ..Reply::default()
        };
        let evs = events(&stream_frames(&reply, &ctx(Value::Null)));
        let done = evs
            .iter()
            .find(|(k, _)| k == "response.output_item.done")
            .unwrap();
        assert!(done.1["item"].get("encrypted_content").is_none());
    }

    #[test]
    fn length_becomes_incomplete() {
        let reply = Reply {
            text: "abc".into(),
            finish_reason: Some("length".into()),
            ..Reply::default()
        };
        let evs = events(&stream_frames(&reply, &ctx(Value::Null)));
        let (kind, last) = evs.last().unwrap();
        assert_eq!(kind, "response.incomplete");
        assert_eq!(
            last["response"]["incomplete_details"]["reason"],
            "max_output_tokens"
        );
    }

    #[test]
    fn cut_malformed_and_error_are_placed_after_n_events() {
        let reply = Reply {
            text: "abcdef".into(),
            chunk_size: 2,
            cut_after: Some(5),
            ..Reply::default()
        };
        let frames = stream_frames(&reply, &ctx(Value::Null));
        assert_eq!(frames.len(), 6);
        assert_eq!(frames[5], Frame::Cut);

        let reply = Reply {
            text: "ab".into(),
            malformed_after: Some(1),
            ..Reply::default()
        };
        let frames = stream_frames(&reply, &ctx(Value::Null));
        assert_eq!(
            frames[1],
            Frame::Event {
                event: "response.in_progress".into(),
                data: "{not json".into()
            }
        );

        let reply = Reply {
            text: "ab".into(),
            error_after: Some(2),
            ..Reply::default()
        };
        let frames = stream_frames(&reply, &ctx(Value::Null));
        assert_eq!(frames.len(), 3);
        let evs = events(&frames);
        assert_eq!(evs[2].0, "error");
        assert_eq!(evs[2].1["sequence_number"], 2);
    }
}

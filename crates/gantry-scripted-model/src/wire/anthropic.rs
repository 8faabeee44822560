//! Anthropic Messages API: a scripted reply as the exact SSE events of
//! `POST /v1/messages` with `stream: true` (pure, no I/O).
//!
//! Order, as the API sends it: `message_start`, `ping`, then one content
//! block per part of the reply — `thinking` (`thinking_delta`s, then one
//! `signature_delta` with a deterministic fake signature), `text`
//! (`text_delta`s), one `tool_use` per call (`input_json_delta`s, the first
//! one empty) — each opened by `content_block_start` and closed by
//! `content_block_stop`, then `message_delta` (stop reason and output usage)
//! and `message_stop`. Default call ids are `toolu_<n>` (n counts calls over
//! the whole script, from 1); the stop reason defaults to `tool_use` when
//! there are calls, else `end_turn`. `cut_after`, `malformed_after` and
//! `error_after` count events from `message_start` (0) on; the error is an
//! `overloaded_error` event, after which the body ends.

use serde_json::{Value, json};

use super::openai_chat::usage;
use super::{Context, Frame, place_faults, split_arguments, split_chars};
use crate::script::Reply;

/// A stand-in for Anthropic's opaque signature: base64-looking, and the same
/// for the same thinking so tests can predict it.
fn fake_signature(thinking: &str) -> String {
    // FNV-1a: stable across runs and Rust versions, unlike `DefaultHasher`.
    let hash = thinking.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("EqQBCkgIARABGAIiQGFudGhyb3BpYy1nYW50cnk{hash:016x}")
}

fn stop_reason(reply: &Reply) -> String {
    match &reply.finish_reason {
        Some(r) => r.clone(),
        None if reply.tool_calls.is_empty() => "end_turn".into(),
        None => "tool_use".into(),
    }
}

/// The frames of a streamed message.
pub(crate) fn stream_frames(reply: &Reply, ctx: &Context) -> Vec<Frame> {
    let u = usage(reply, ctx);
    // The server names replies `msg-gantry-N`; Anthropic ids are `msg_...`.
    let id = ctx.id.replace('-', "_");
    let mut events: Vec<(&str, Value)> = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": ctx.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {
                    // Anthropic's input_tokens leave out cache reads; the script's include them.
                    "input_tokens": u.prompt_tokens.saturating_sub(u.cached_tokens + u.cache_write_tokens),
                    "cache_creation_input_tokens": u.cache_write_tokens,
                    "cache_read_input_tokens": u.cached_tokens,
                    "output_tokens": 1,
                },
            }}),
        ),
        ("ping", json!({"type": "ping"})),
    ];

    let mut index = 0;
    let mut block = |events: &mut Vec<(&str, Value)>, start: Value, deltas: Vec<Value>| {
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    };

    if !reply.reasoning.is_empty() {
        let mut deltas: Vec<Value> = split_chars(&reply.reasoning, reply.chunk_size)
            .into_iter()
            .map(|t| json!({"type": "thinking_delta", "thinking": t}))
            .collect();
        deltas.push(
            json!({"type": "signature_delta", "signature": fake_signature(&reply.reasoning)}),
        );
        block(
            &mut events,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            deltas,
        );
    }
    if !reply.text.is_empty() {
        let deltas = split_chars(&reply.text, reply.chunk_size)
            .into_iter()
            .map(|t| json!({"type": "text_delta", "text": t}))
            .collect();
        block(&mut events, json!({"type": "text", "text": ""}), deltas);
    }
    for (i, call) in reply.tool_calls.iter().enumerate() {
        let id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("toolu_{}", ctx.first_call + i));
        // The API opens every tool input with an empty fragment.
        let deltas = std::iter::once(String::new())
            .chain(split_arguments(&call.arguments_text(), reply.chunk_size))
            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
            .collect();
        block(
            &mut events,
            json!({"type": "tool_use", "id": id, "name": call.name, "input": {}}),
            deltas,
        );
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
               "usage": {"output_tokens": u.completion_tokens}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));

    let events = events
        .into_iter()
        .map(|(event, data)| Frame::Event {
            event: event.into(),
            data: data.to_string(),
        })
        .collect();
    let error = |_| {
        let err = json!({"type": "error",
                         "error": {"type": "overloaded_error", "message": "Overloaded"}});
        Frame::Event {
            event: "error".into(),
            data: err.to_string(),
        }
    };
    let malformed = |_: &Frame| Frame::Event {
        event: "content_block_delta".into(),
        data: "{not json".into(),
    };
    place_faults(reply, events, error, malformed, None)
}

/// Anthropic's error body for an HTTP status.
pub(crate) fn error_body(status: u16) -> Value {
    let kind = match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        s if s >= 500 => "api_error",
        _ => "invalid_request_error",
    };
    let message = format!("gantry-scripted-model: scripted HTTP {status}");
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::ToolCallSpec;
    use crate::wire::events;

    fn ctx() -> Context {
        Context {
            id: "msg-gantry-1".into(),
            model: "claude-test".into(),
            created: 0,
            first_call: 3,
            include_usage: false,
            prompt_chars: 40,
            request: Value::Null,
        }
    }

    #[test]
    fn blocks_come_in_documented_order_with_matching_types() {
        let reply = Reply {
            reasoning: "hmm".into(),
            text: "abcde".into(),
            tool_calls: vec![ToolCallSpec::new("shell", json!({"cmd": "ls"}))],
            chunk_size: 2,
            ..Reply::default()
        };
        let ev = events(&stream_frames(&reply, &ctx()));
        for (name, data) in &ev {
            assert_eq!(data["type"], name.as_str());
        }
        let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            &names[..3],
            ["message_start", "ping", "content_block_start"]
        );
        assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);
        assert_eq!(ev[0].1["message"]["id"], "msg_gantry_1");
        let starts: Vec<(&Value, &Value)> = ev
            .iter()
            .filter(|(n, _)| n == "content_block_start")
            .map(|(_, d)| (&d["index"], &d["content_block"]["type"]))
            .collect();
        assert_eq!(
            starts,
            [
                (&json!(0), &json!("thinking")),
                (&json!(1), &json!("text")),
                (&json!(2), &json!("tool_use"))
            ]
        );
        let deltas = |kind: &str, field: &str| -> String {
            ev.iter()
                .filter(|(_, d)| d["delta"]["type"] == kind)
                .filter_map(|(_, d)| d["delta"][field].as_str())
                .collect()
        };
        assert_eq!(deltas("thinking_delta", "thinking"), "hmm");
        assert_eq!(
            deltas("signature_delta", "signature"),
            fake_signature("hmm")
        );
        assert_eq!(deltas("text_delta", "text"), "abcde");
        assert_eq!(
            deltas("input_json_delta", "partial_json"),
            r#"{"cmd":"ls"}"#
        );
        let tool = ev
            .iter()
            .find(|(_, d)| d["content_block"]["type"] == "tool_use")
            .unwrap();
        assert_eq!(tool.1["content_block"]["id"], "toolu_3");
        let delta = &ev[ev.len() - 2].1;
        assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    }

    #[test]
    fn cut_error_and_malformed_count_events() {
        let reply = Reply {
            text: "abcdef".into(),
            chunk_size: 2,
            cut_after: Some(3),
            ..Reply::default()
        };
        let frames = stream_frames(&reply, &ctx());
        assert_eq!(frames.len(), 4);
        assert_eq!(frames[3], Frame::Cut);

        let reply = Reply {
            text: "ab".into(),
            error_after: Some(2),
            ..Reply::default()
        };
        let frames = stream_frames(&reply, &ctx());
        assert_eq!(frames.len(), 3);
        assert!(matches!(&frames[2], Frame::Event { event, data }
            if event == "error" && data.contains("overloaded_error")));

        let reply = Reply {
            text: "ab".into(),
            malformed_after: Some(1),
            ..Reply::default()
        };
        let frames = stream_frames(&reply, &ctx());
        assert!(matches!(&frames[1], Frame::Event { data, .. } if data == "{not json"));
    }

    #[test]
    fn error_bodies_by_status() {
        let kind = |s| error_body(s)["error"]["type"].as_str().unwrap().to_owned();
        assert_eq!(error_body(401)["type"], "error");
        assert_eq!(kind(401), "authentication_error");
        assert_eq!(kind(403), "permission_error");
        assert_eq!(kind(429), "rate_limit_error");
        assert_eq!(kind(529), "overloaded_error");
        assert_eq!(kind(500), "api_error");
        assert_eq!(kind(400), "invalid_request_error");
    }
}

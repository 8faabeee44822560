//! OpenAI Chat Completions: a scripted reply as the exact chunks OpenAI
//! streams (pure, no I/O).

use serde_json::{Value, json};

use super::{Context, Frame, place_faults, split_arguments, split_chars};
use crate::script::{Reply, UsageSpec};

/// A tool call with its id and arguments resolved.
struct Call {
    id: String,
    name: String,
    arguments: String,
}

fn resolve_calls(reply: &Reply, ctx: &Context) -> Vec<Call> {
    reply
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| Call {
            id: c
                .id
                .clone()
                .unwrap_or_else(|| format!("call_{}", ctx.first_call + i)),
            name: c.name.clone(),
            arguments: c.arguments_text(),
        })
        .collect()
}

fn finish_reason(reply: &Reply) -> String {
    match &reply.finish_reason {
        Some(r) => r.clone(),
        None if reply.tool_calls.is_empty() => "stop".into(),
        None => "tool_calls".into(),
    }
}

/// The usage a reply reports: scripted, or about 4 characters per token.
pub(crate) fn usage(reply: &Reply, ctx: &Context) -> UsageSpec {
    if let Some(u) = reply.usage {
        return u;
    }
    let out_chars = reply.text.chars().count()
        + reply.reasoning.chars().count()
        + reply
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments_text().len())
            .sum::<usize>();
    UsageSpec {
        prompt_tokens: ctx.prompt_chars.div_ceil(4) as u64,
        completion_tokens: out_chars.div_ceil(4) as u64,
        cached_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: reply.reasoning.chars().count().div_ceil(4) as u64,
    }
}

fn usage_json(u: UsageSpec) -> Value {
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
    })
}

/// Every SSE frame of a streamed reply, `[DONE]` included.
pub(crate) fn stream_frames(reply: &Reply, ctx: &Context) -> Vec<Frame> {
    let chunk = |delta: Value, finish: Option<&str>| {
        let mut c = json!({
            "id": ctx.id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "system_fingerprint": null,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        // OpenAI sends `"usage": null` on every chunk once usage was requested.
        if ctx.include_usage {
            c["usage"] = Value::Null;
        }
        c.to_string()
    };

    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    for piece in split_chars(&reply.reasoning, reply.chunk_size) {
        events.push(chunk(json!({"reasoning_content": piece}), None));
    }
    for piece in split_chars(&reply.text, reply.chunk_size) {
        events.push(chunk(json!({"content": piece}), None));
    }
    for (index, call) in resolve_calls(reply, ctx).into_iter().enumerate() {
        let head = json!({"tool_calls": [{
            "index": index, "id": call.id, "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }]});
        events.push(chunk(head, None));
        for piece in split_arguments(&call.arguments, reply.chunk_size) {
            let frag = json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
            events.push(chunk(frag, None));
        }
    }
    events.push(chunk(json!({}), Some(&finish_reason(reply))));
    if ctx.include_usage {
        let mut u = json!({
            "id": ctx.id, "object": "chat.completion.chunk", "created": ctx.created,
            "model": ctx.model, "system_fingerprint": null, "choices": [],
        });
        u["usage"] = usage_json(usage(reply, ctx));
        events.push(u.to_string());
    }

    let error = |_| {
        let err = json!({"error": {
            "message": "gantry-scripted-model: scripted stream error",
            "type": "server_error", "code": 500,
        }});
        Frame::Data(err.to_string())
    };
    place_faults(
        reply,
        events.into_iter().map(Frame::Data).collect(),
        error,
        |_| Frame::Data("{not json".into()),
        Some(Frame::Data("[DONE]".into())),
    )
}

/// The `chat.completion` object answering a `"stream": false` request.
pub(crate) fn completion(reply: &Reply, ctx: &Context) -> Value {
    let calls: Vec<Value> = resolve_calls(reply, ctx)
        .into_iter()
        .map(|c| {
            json!({"id": c.id, "type": "function",
                   "function": {"name": c.name, "arguments": c.arguments}})
        })
        .collect();
    let mut message = json!({
        "role": "assistant",
        "content": if reply.text.is_empty() { Value::Null } else { reply.text.clone().into() },
    });
    if !reply.reasoning.is_empty() {
        message["reasoning_content"] = reply.reasoning.clone().into();
    }
    if !calls.is_empty() {
        message["tool_calls"] = calls.into();
    }
    json!({
        "id": ctx.id,
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{"index": 0, "message": message, "logprobs": null,
                     "finish_reason": finish_reason(reply)}],
        "usage": usage_json(usage(reply, ctx)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::ToolCallSpec;

    fn ctx(include_usage: bool) -> Context {
        Context {
            id: "chatcmpl-1".into(),
            model: "m".into(),
            created: 0,
            first_call: 1,
            include_usage,
            prompt_chars: 40,
            request: Value::Null,
        }
    }

    fn data(frames: &[Frame]) -> Vec<Value> {
        frames
            .iter()
            .filter_map(|f| match f {
                Frame::Data(d) if d != "[DONE]" => serde_json::from_str(d).ok(),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn text_is_chunked_and_ends_with_stop_usage_and_done() {
        let reply = Reply {
            text: "abcdefgh".into(),
            chunk_size: 3,
            ..Reply::default()
        };
        let frames = stream_frames(&reply, &ctx(true));
        assert_eq!(frames.last(), Some(&Frame::Data("[DONE]".into())));
        let chunks = data(&frames);
        let text: Vec<&str> = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, ["", "abc", "def", "gh"]);
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        let finish = &chunks[chunks.len() - 2];
        assert_eq!(finish["choices"][0]["finish_reason"], "stop");
        let usage = &chunks[chunks.len() - 1];
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"]["prompt_tokens"], 10);
        assert_eq!(usage["usage"]["total_tokens"], 12);
    }

    #[test]
    fn tool_call_head_has_id_and_name_then_fragments_only_index() {
        let reply = Reply {
            tool_calls: vec![ToolCallSpec::new("shell", json!({"cmd": "ls"}))],
            ..Reply::default()
        };
        let chunks = data(&stream_frames(&reply, &ctx(false)));
        let calls: Vec<&Value> = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"].get("tool_calls"))
            .collect();
        assert_eq!(calls[0][0]["id"], "call_1");
        assert_eq!(calls[0][0]["function"]["name"], "shell");
        assert!(calls.len() >= 3, "arguments must be split: {calls:?}");
        let args: String = calls
            .iter()
            .filter_map(|c| c[0]["function"]["arguments"].as_str())
            .collect();
        assert_eq!(args, r#"{"cmd":"ls"}"#);
        assert!(calls[1][0].get("id").is_none());
        assert_eq!(
            chunks.last().unwrap()["choices"][0]["finish_reason"],
            "tool_calls"
        );
        assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    }

    #[test]
    fn cut_and_malformed_are_placed_after_n_events() {
        let reply = Reply {
            text: "abcdef".into(),
            chunk_size: 2,
            cut_after: Some(2),
            ..Reply::default()
        };
        let frames = stream_frames(&reply, &ctx(false));
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[2], Frame::Cut);

        let reply = Reply {
            text: "ab".into(),
            malformed_after: Some(1),
            ..Reply::default()
        };
        let frames = stream_frames(&reply, &ctx(false));
        assert_eq!(frames[1], Frame::Data("{not json".into()));
    }
}

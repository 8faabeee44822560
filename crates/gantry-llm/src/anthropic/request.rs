//! The Messages request body.

use serde_json::{Map, Value, json};

use gantry_types::ToolSpec;

use crate::wire::Wire;
use crate::{History, Message, ModelRequest, ReasoningBlock, ToolCall, wire};

/// `max_tokens` when the request sets no cap (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The extended-thinking budget (`thinking.budget_tokens`) for a reasoning
/// effort, or `None` when thinking stays off.
///
/// | effort | budget |
/// |---|---|
/// | `none`, `off`, `disabled`, empty | thinking off |
/// | `minimal`, `low` | 1024 (the API's minimum) |
/// | `medium` | 4096 |
/// | `high` | 16384 |
/// | `xhigh`, `max` | 32768 |
/// | a number, e.g. `10000` | that many tokens, at least 1024 |
/// | anything else | 4096 |
pub fn thinking_budget(effort: &str) -> Option<u32> {
    let effort = effort.trim().to_ascii_lowercase();
    Some(match effort.as_str() {
        "" | "none" | "off" | "disabled" => return None,
        "minimal" | "low" => 1024,
        "medium" => 4096,
        "high" => 16384,
        "xhigh" | "max" => 32768,
        other => other.parse::<u32>().map_or(4096, |n| n.max(1024)),
    })
}

/// The JSON body for `request`, always streaming.
pub(crate) fn body(request: &ModelRequest) -> String {
    let budget = request.reasoning.as_deref().and_then(thinking_budget);
    let mut max_tokens = request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    if let Some(budget) = budget
        && max_tokens <= budget
    {
        // The API wants max_tokens > budget_tokens (thinking counts towards
        // it); the requested cap is kept as room for the answer itself.
        max_tokens = budget.saturating_add(max_tokens.max(1));
    }

    let mut body = Map::new();
    body.insert("model".into(), request.model.clone().into());
    body.insert("max_tokens".into(), max_tokens.into());
    // Extended thinking requires the default temperature.
    if let Some(t) = request.temperature.filter(|_| budget.is_none()) {
        body.insert("temperature".into(), f64::from(t).into());
    }
    if let Some(system) = request.instructions.as_ref().filter(|s| !s.is_empty()) {
        body.insert("system".into(), system.clone().into());
    }
    body.insert("messages".into(), Value::Null);
    let tools = (!request.tools.is_empty()).then(|| request.tools.rendered(Wire::Anthropic, tools));
    if tools.is_some() {
        body.insert("tools".into(), Value::Null);
    }
    body.insert("stream".into(), true.into());
    if let Some(budget) = budget {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    let messages = messages(&request.messages);
    let mut raws = vec![("messages", messages.as_str())];
    raws.extend(tools.map(|t| ("tools", t)));
    wire::object(&body, &raws)
}

/// The `tools` array.
fn tools(specs: &[ToolSpec]) -> String {
    let tools = specs.iter().map(
        |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
    );
    format!("[{}]", wire::fragment(tools))
}

/// The conversation as alternating `user`/`assistant` messages of content
/// blocks: consecutive same-role messages are merged, tool results become
/// `tool_result` blocks of a user message.
fn messages(history: &History) -> String {
    let mut merged = Vec::new();
    let mut current: Option<Merged> = None;
    for (m, blocks) in history.rendered(Wire::Anthropic, |m| wire::fragment(blocks(m))) {
        // The API rejects empty messages and empty text blocks.
        if blocks.is_empty() {
            continue;
        }
        let role = match m {
            Message::Assistant { .. } => "assistant",
            Message::User { .. } | Message::ToolResult { .. } => "user",
        };
        if current.as_ref().is_some_and(|c| c.role != role) {
            merged.extend(current.take().map(Merged::into_json));
        }
        let next = current.get_or_insert_with(|| Merged {
            role,
            results: Vec::new(),
            rest: Vec::new(),
        });
        // Tool results must open the user message that answers the tool
        // calls; a steered user text goes after them, in order.
        if matches!(m, Message::ToolResult { .. }) {
            next.results.push(blocks);
        } else {
            next.rest.push(blocks);
        }
    }
    merged.extend(current.map(Merged::into_json));
    wire::array(merged.iter().map(String::as_str))
}

/// One wire message being merged from consecutive same-role messages: the
/// content blocks of its tool results, then those of the rest.
struct Merged<'a> {
    role: &'static str,
    results: Vec<&'a str>,
    rest: Vec<&'a str>,
}

impl Merged<'_> {
    fn into_json(self) -> String {
        let content = wire::array(self.results.into_iter().chain(self.rest));
        let mut fields = Map::new();
        fields.insert("role".into(), self.role.into());
        fields.insert("content".into(), Value::Null);
        wire::object(&fields, &[("content", &content)])
    }
}

/// The content blocks of one message.
fn blocks(m: &Message) -> Vec<Value> {
    match m {
        Message::User { text, images } => {
            // Images as base64 `image` blocks, before the text (as Anthropic
            // advises).
            let mut blocks: Vec<Value> = images
                .iter()
                .map(|i| {
                    json!({"type": "image", "source": {
                        "type": "base64", "media_type": i.media_type, "data": i.data,
                    }})
                })
                .collect();
            blocks.extend(text_block(text));
            blocks
        }
        Message::Assistant {
            reasoning,
            text,
            tool_calls,
        } => assistant_blocks(reasoning, text, tool_calls),
        Message::ToolResult { call_id, output } => {
            let mut block = json!({"type": "tool_result", "tool_use_id": call_id});
            // `content` is optional; an empty string is left out.
            if !output.is_empty() {
                block["content"] = output.clone().into();
            }
            vec![block]
        }
    }
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// Reasoning (signed or redacted only), then text, then tool calls.
fn assistant_blocks(reasoning: &[ReasoningBlock], text: &str, calls: &[ToolCall]) -> Vec<Value> {
    let mut blocks: Vec<Value> = reasoning.iter().filter_map(thinking_block).collect();
    blocks.extend(text_block(text));
    blocks.extend(calls.iter().map(|c| {
        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": tool_input(&c.arguments)})
    }));
    blocks
}

/// A thinking block as the API wants it back; unsigned thinking (from another
/// provider, or cut short) is dropped because the API rejects it.
fn thinking_block(block: &ReasoningBlock) -> Option<Value> {
    if let Some(data) = &block.opaque {
        return Some(json!({"type": "redacted_thinking", "data": data}));
    }
    let signature = block.signature.as_ref()?;
    Some(json!({"type": "thinking", "thinking": block.text, "signature": signature}))
}

/// The arguments as a JSON object. Invalid ones become `{}`: the API only
/// takes objects, and the tool result already told the model its JSON was bad.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body, parsed.
    fn body(request: &ModelRequest) -> Value {
        serde_json::from_str(&super::body(request)).expect("the body is JSON")
    }

    fn call(id: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "shell".into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn minimal_body_has_max_tokens_and_no_optional_fields() {
        let req = ModelRequest {
            model: "claude".into(),
            messages: vec![Message::user("hi")].into(),
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&req),
            json!({"model": "claude", "max_tokens": DEFAULT_MAX_TOKENS, "stream": true,
                   "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]})
        );
    }

    #[test]
    fn budgets_by_effort_and_max_tokens_above_budget() {
        assert_eq!(thinking_budget("low"), Some(1024));
        assert_eq!(thinking_budget("Medium"), Some(4096));
        assert_eq!(thinking_budget("high"), Some(16384));
        assert_eq!(thinking_budget("max"), Some(32768));
        assert_eq!(thinking_budget("500"), Some(1024));
        assert_eq!(thinking_budget("20000"), Some(20000));
        assert_eq!(thinking_budget("weird"), Some(4096));
        assert_eq!(thinking_budget("none"), None);

        let mut req = ModelRequest {
            reasoning: Some("high".into()),
            ..ModelRequest::default()
        };
        let b = body(&req);
        assert_eq!(
            b["thinking"],
            json!({"type": "enabled", "budget_tokens": 16384})
        );
        assert_eq!(b["max_tokens"], 16384 + DEFAULT_MAX_TOKENS);
        req.max_output_tokens = Some(32000);
        assert_eq!(body(&req)["max_tokens"], 32000);
        req.reasoning = Some("none".into());
        assert!(body(&req).get("thinking").is_none());
    }

    #[test]
    fn temperature_is_sent_except_with_thinking() {
        let mut req = ModelRequest {
            temperature: Some(0.5),
            ..ModelRequest::default()
        };
        assert_eq!(body(&req)["temperature"], 0.5);
        req.reasoning = Some("low".into());
        assert!(body(&req).get("temperature").is_none());
    }

    #[test]
    fn roles_alternate_and_tool_results_lead_their_user_message() {
        let history = vec![
            Message::user("a"),
            Message::user("b"),
            Message::Assistant {
                reasoning: vec![
                    ReasoningBlock {
                        text: "unsigned".into(),
                        ..ReasoningBlock::default()
                    },
                    ReasoningBlock {
                        text: "t".into(),
                        signature: Some("sig".into()),
                        opaque: None,
                    },
                    ReasoningBlock {
                        opaque: Some("blob".into()),
                        ..ReasoningBlock::default()
                    },
                ],
                text: String::new(),
                tool_calls: vec![call("t1", r#"{"x":1}"#), call("t2", "{bad")],
            },
            Message::user("steer"),
            Message::ToolResult {
                call_id: "t1".into(),
                output: "ok".into(),
            },
            Message::ToolResult {
                call_id: "t2".into(),
                output: String::new(),
            },
        ];
        let m: Vec<Value> =
            serde_json::from_str(&messages(&history.into())).expect("the messages are JSON");
        assert_eq!(m.len(), 3);
        assert_eq!(
            m[0],
            json!({"role": "user", "content": [
                {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
        );
        assert_eq!(
            m[1],
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": "sig"},
                {"type": "redacted_thinking", "data": "blob"},
                {"type": "tool_use", "id": "t1", "name": "shell", "input": {"x": 1}},
                {"type": "tool_use", "id": "t2", "name": "shell", "input": {}}]})
        );
        assert_eq!(
            m[2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "t2"},
                {"type": "text", "text": "steer"}]})
        );
    }

    #[test]
    fn images_are_base64_image_blocks_before_the_text() {
        let history = History::from(vec![Message::User {
            text: "what is this?".into(),
            images: vec![gantry_types::ImagePart::new("image/webp", "aGk=")],
        }]);
        let m: Vec<Value> =
            serde_json::from_str(&messages(&history)).expect("the messages are JSON");
        assert_eq!(
            m,
            vec![json!({"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": "aGk="}},
                {"type": "text", "text": "what is this?"},
            ]})]
        );
    }
}

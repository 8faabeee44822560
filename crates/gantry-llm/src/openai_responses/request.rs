//! The Responses API request body.

use serde_json::{Map, Value, json};

use gantry_types::ToolSpec;

use super::opaque;
use crate::wire::Wire;
use crate::{Message, ModelRequest, ReasoningBlock, wire};

/// The JSON body for `request`: streaming, stateless (`store: false`, the
/// whole conversation as `input` every time, no `previous_response_id`).
pub(crate) fn body(request: &ModelRequest) -> String {
    let input = wire::array(
        request
            .messages
            .rendered(Wire::Responses, |m| {
                let mut items = Vec::new();
                push_items(m, &mut items);
                wire::fragment(items)
            })
            .map(|(_, f)| f),
    );

    let mut body = Map::new();
    body.insert("model".into(), request.model.clone().into());
    if let Some(instructions) = &request.instructions {
        body.insert("instructions".into(), instructions.clone().into());
    }
    body.insert("input".into(), Value::Null);
    let tools = (!request.tools.is_empty()).then(|| request.tools.rendered(Wire::Responses, tools));
    if tools.is_some() {
        body.insert("tools".into(), Value::Null);
    }
    body.insert("stream".into(), true.into());
    // Nothing is kept server-side, so reasoning must come back encrypted to
    // be sent again with the next request.
    body.insert("store".into(), false.into());
    if let Some(effort) = &request.reasoning {
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        body.insert(
            "reasoning".into(),
            json!({"effort": effort, "summary": "auto"}),
        );
    }
    if let Some(max) = request.max_output_tokens {
        body.insert("max_output_tokens".into(), max.into());
    }
    if let Some(t) = request.temperature.filter(|_| request.reasoning.is_none()) {
        body.insert("temperature".into(), f64::from(t).into());
    }
    let mut raws = vec![("input", input.as_str())];
    raws.extend(tools.map(|t| ("tools", t)));
    wire::object(&body, &raws)
}

/// The `tools` array.
fn tools(specs: &[ToolSpec]) -> String {
    let tools = specs.iter().map(|t| {
        // Not strict: strict mode rejects the optional properties most tool
        // schemas have.
        json!({"type": "function", "name": t.name, "description": t.description,
               "parameters": t.parameters, "strict": false})
    });
    format!("[{}]", wire::fragment(tools))
}

/// Appends the input items of one message, in the order the API produced them.
fn push_items(m: &Message, input: &mut Vec<Value>) {
    match m {
        Message::User { text, images } => {
            // Images as `input_image` parts holding a data URL, before the text.
            let mut content: Vec<Value> = images
                .iter()
                .map(|i| json!({"type": "input_image", "image_url": i.data_url()}))
                .collect();
            if !text.is_empty() || content.is_empty() {
                content.push(json!({"type": "input_text", "text": text}));
            }
            input.push(json!({"type": "message", "role": "user", "content": content}));
        }
        Message::Assistant {
            reasoning,
            text,
            tool_calls,
        } => {
            input.extend(reasoning.iter().filter_map(reasoning_item));
            if !text.is_empty() {
                input.push(json!({
                    "type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                }));
            }
            input.extend(tool_calls.iter().map(|c| {
                json!({"type": "function_call", "call_id": c.id, "name": c.name,
                       "arguments": c.arguments})
            }));
        }
        Message::ToolResult { call_id, output } => input.push(json!({
            "type": "function_call_output", "call_id": call_id, "output": output,
        })),
    }
}

/// A `reasoning` input item, for blocks this API produced (others, e.g.
/// Anthropic thinking, cannot be replayed here and are left out). The item id
/// is not sent: with `store: false` the server would look it up and fail.
fn reasoning_item(block: &ReasoningBlock) -> Option<Value> {
    let encrypted = opaque::decode(block.opaque.as_deref()?)?;
    let summary: Vec<Value> = if block.text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "summary_text", "text": block.text})]
    };
    Some(json!({"type": "reasoning", "summary": summary, "encrypted_content": encrypted}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolCall;

    /// The body, parsed.
    fn body(request: &ModelRequest) -> Value {
        serde_json::from_str(&super::body(request)).expect("the body is JSON")
    }

    #[test]
    fn temperature_is_sent_except_with_a_reasoning_effort() {
        let mut req = ModelRequest {
            temperature: Some(1.5),
            ..ModelRequest::default()
        };
        assert_eq!(body(&req)["temperature"], 1.5);
        req.reasoning = Some("low".into());
        assert!(body(&req).get("temperature").is_none());
    }

    #[test]
    fn optional_fields_are_left_out() {
        let req = ModelRequest {
            model: "m".into(),
            messages: vec![Message::user("hi")].into(),
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&req),
            json!({"model": "m", "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
            ], "stream": true, "store": false})
        );
    }

    #[test]
    fn only_this_apis_reasoning_is_replayed() {
        let ours = ReasoningBlock {
            text: "Thought.".into(),
            signature: None,
            opaque: Some(opaque::encode(Some("rs_1"), "gAAAA")),
        };
        let anthropic = ReasoningBlock {
            text: "Claude thought.".into(),
            signature: Some("sig".into()),
            opaque: None,
        };
        let redacted = ReasoningBlock {
            opaque: Some("EmwKAhgBEgy".into()),
            ..ReasoningBlock::default()
        };
        let mut input = Vec::new();
        push_items(
            &Message::Assistant {
                reasoning: vec![anthropic, ours, redacted],
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "shell".into(),
                    arguments: "{}".into(),
                }],
            },
            &mut input,
        );
        assert_eq!(
            input,
            vec![
                json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Thought."}],
                       "encrypted_content": "gAAAA"}),
                json!({"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": "{}"}),
            ]
        );
    }

    #[test]
    fn images_are_input_image_parts_before_the_text() {
        let mut input = Vec::new();
        push_items(
            &Message::User {
                text: "what is this?".into(),
                images: vec![gantry_types::ImagePart::new("image/jpeg", "aGk=")],
            },
            &mut input,
        );
        assert_eq!(
            input,
            vec![json!({"type": "message", "role": "user", "content": [
                {"type": "input_image", "image_url": "data:image/jpeg;base64,aGk="},
                {"type": "input_text", "text": "what is this?"},
            ]})]
        );
    }
}

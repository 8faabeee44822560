//! The Chat Completions request body.

use serde_json::{Map, Value, json};

use gantry_types::ToolSpec;

use crate::wire::Wire;
use crate::{Message, ModelRequest, wire};

/// The JSON body for `request`, always streaming with usage.
pub(crate) fn body(request: &ModelRequest) -> String {
    let system = request
        .instructions
        .as_ref()
        .map(|instructions| json!({"role": "system", "content": instructions}).to_string());
    let history = request
        .messages
        .rendered(Wire::Chat, |m| message(m).to_string());
    let messages = wire::array(system.as_deref().into_iter().chain(history.map(|(_, f)| f)));

    let mut body = Map::new();
    body.insert("model".into(), request.model.clone().into());
    body.insert("messages".into(), Value::Null);
    // Some servers reject an empty `tools` array, so it is left out.
    let tools = (!request.tools.is_empty()).then(|| request.tools.rendered(Wire::Chat, tools));
    if tools.is_some() {
        body.insert("tools".into(), Value::Null);
    }
    body.insert("stream".into(), true.into());
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if let Some(effort) = &request.reasoning {
        body.insert("reasoning_effort".into(), effort.clone().into());
    }
    if let Some(max) = request.max_output_tokens {
        body.insert("max_tokens".into(), max.into());
    }
    if let Some(t) = request.temperature.filter(|_| request.reasoning.is_none()) {
        body.insert("temperature".into(), f64::from(t).into());
    }
    let mut raws = vec![("messages", messages.as_str())];
    raws.extend(tools.map(|t| ("tools", t)));
    wire::object(&body, &raws)
}

/// The `tools` array.
fn tools(specs: &[ToolSpec]) -> String {
    let tools = specs.iter().map(|t| {
        json!({"type": "function", "function": {
            "name": t.name, "description": t.description, "parameters": t.parameters,
        }})
    });
    format!("[{}]", wire::fragment(tools))
}

fn message(m: &Message) -> Value {
    match m {
        Message::User { text, images } if images.is_empty() => {
            json!({"role": "user", "content": text})
        }
        // Images go as `image_url` parts holding a data URL, before the text.
        Message::User { text, images } => {
            let mut parts: Vec<Value> = images
                .iter()
                .map(|i| json!({"type": "image_url", "image_url": {"url": i.data_url()}}))
                .collect();
            if !text.is_empty() {
                parts.push(json!({"type": "text", "text": text}));
            }
            json!({"role": "user", "content": parts})
        }
        // Chat Completions takes no reasoning back.
        Message::Assistant {
            text, tool_calls, ..
        } => {
            // An assistant turn that only called tools has `content: null`.
            let content = if text.is_empty() {
                Value::Null
            } else {
                text.clone().into()
            };
            let mut msg = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                msg["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": c.arguments}})
                    })
                    .collect::<Vec<_>>()
                    .into();
            }
            msg
        }
        Message::ToolResult { call_id, output } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": output})
        }
    }
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
    fn optional_fields_are_left_out() {
        let req = ModelRequest {
            model: "m".into(),
            messages: vec![Message::user("hi")].into(),
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&req),
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                   "stream": true, "stream_options": {"include_usage": true}})
        );
    }

    #[test]
    fn temperature_is_sent_except_with_a_reasoning_effort() {
        let mut req = ModelRequest {
            temperature: Some(0.25),
            ..ModelRequest::default()
        };
        assert_eq!(body(&req)["temperature"], 0.25);
        req.reasoning = Some("high".into());
        assert!(body(&req).get("temperature").is_none());
    }

    #[test]
    fn assistant_without_text_has_null_content() {
        let call = ToolCall {
            id: "c1".into(),
            name: "shell".into(),
            arguments: "{}".into(),
        };
        let v = message(&Message::Assistant {
            reasoning: Vec::new(),
            text: String::new(),
            tool_calls: vec![call],
        });
        assert_eq!(v["content"], Value::Null);
        assert_eq!(v["tool_calls"][0]["function"]["arguments"], "{}");
    }

    #[test]
    fn images_are_data_url_parts_before_the_text() {
        let m = message(&Message::User {
            text: "what is this?".into(),
            images: vec![gantry_types::ImagePart::new("image/png", "aGk=")],
        });
        assert_eq!(
            m,
            json!({"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
                {"type": "text", "text": "what is this?"},
            ]})
        );
    }
}

//! The Chat Completions request body.

use serde_json::{Map, Value, json};

use gantry_types::ToolSpec;

use crate::wire::Wire;
use crate::{Message, ModelRequest, OutputSchema, wire};

/// The JSON body for `request`: streamed (with usage) or not, with the
/// provider's `tool_choice` when tools are offered.
pub(crate) fn body(request: &ModelRequest, tool_choice: Option<&str>, stream: bool) -> String {
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
        let answered = matches!(request.messages.last(), Some(Message::ToolResult { .. }));
        if let Some(choice) = tool_choice.and_then(|c| choice(c, &request.tools, answered)) {
            body.insert("tool_choice".into(), choice);
        }
    }
    if stream {
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if let Some(effort) = &request.reasoning {
        body.insert("reasoning_effort".into(), effort.clone().into());
    }
    if let Some(max) = request.max_output_tokens {
        body.insert("max_tokens".into(), max.into());
    }
    if let Some(t) = request.temperature.filter(|_| request.reasoning.is_none()) {
        body.insert("temperature".into(), f64::from(t).into());
    }
    if let Some(output) = &request.output_schema {
        body.insert("response_format".into(), response_format(output));
    }
    let mut raws = vec![("messages", messages.as_str())];
    raws.extend(tools.map(|t| ("tools", t)));
    wire::object(&body, &raws)
}

/// Native structured output: the model's text answer is held to the schema.
/// Not `strict`: strict mode refuses every schema that leaves a property
/// optional or allows extra ones, which callers' schemas do not promise;
/// the agent loop validates the answer either way.
fn response_format(output: &OutputSchema) -> Value {
    json!({
        "type": "json_schema",
        "json_schema": {"name": output.name, "schema": output.schema, "strict": false}
    })
}

/// `tool_choice` for the setting `choice`: a mode, or a tool by name
/// (left out when that tool is not offered). A forced choice (`required`,
/// a tool) goes with a turn's first request only: once the model has its
/// tools' results (`answered`), forcing another call would leave it no way
/// to answer, so it gets `auto`.
fn choice(choice: &str, tools: &[ToolSpec], answered: bool) -> Option<Value> {
    match choice.trim() {
        "" => None,
        mode @ ("auto" | "none") => Some(mode.into()),
        _ if answered => Some("auto".into()),
        "required" => Some("required".into()),
        name => tools
            .iter()
            .any(|t| t.name == name)
            .then(|| json!({"type": "function", "function": {"name": name}})),
    }
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
            // An assistant turn that only called tools has empty content,
            // not `null`: llama.cpp's servers and SGLang refuse `null`
            // (500), and OpenAI takes both.
            let mut msg = json!({"role": "assistant", "content": text});
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
        serde_json::from_str(&super::body(request, None, true)).expect("the body is JSON")
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
    fn an_output_schema_asks_for_native_structured_output() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        let req = ModelRequest {
            output_schema: Some(OutputSchema {
                name: "answer".into(),
                schema: schema.clone(),
            }),
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&req)["response_format"],
            json!({"type": "json_schema",
                   "json_schema": {"name": "answer", "schema": schema, "strict": false}})
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
    fn assistant_without_text_has_empty_content() {
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
        assert_eq!(v["content"], "");
        assert_eq!(v["tool_calls"][0]["function"]["arguments"], "{}");
    }

    #[test]
    fn tool_choice_goes_with_offered_tools_and_unstreamed_has_no_stream_fields() {
        let shell = ToolSpec {
            name: "shell".into(),
            description: "run".into(),
            parameters: json!({"type": "object"}),
        };
        let req = ModelRequest {
            tools: vec![shell].into(),
            ..ModelRequest::default()
        };
        let with = |choice| -> Value {
            serde_json::from_str(&super::body(&req, Some(choice), false)).unwrap()
        };
        assert_eq!(with("auto")["tool_choice"], "auto");
        assert_eq!(
            with("shell")["tool_choice"],
            json!({"type": "function", "function": {"name": "shell"}})
        );
        assert!(with("grep").get("tool_choice").is_none(), "not offered");
        // Once the model has its call's result, it may answer.
        let mut answered = req.clone();
        answered.messages.push(Message::ToolResult {
            call_id: "c".into(),
            output: "done".into(),
        });
        let after: Value =
            serde_json::from_str(&super::body(&answered, Some("shell"), false)).unwrap();
        assert_eq!(after["tool_choice"], "auto");
        assert!(with("auto").get("stream").is_none());
        assert!(with("auto").get("stream_options").is_none());
        let bare: Value =
            serde_json::from_str(&super::body(&ModelRequest::default(), Some("auto"), true))
                .unwrap();
        assert!(bare.get("tool_choice").is_none(), "no tools, no choice");
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

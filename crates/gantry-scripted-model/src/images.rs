//! The images a request carried, whatever its wire: Chat Completions
//! `image_url` parts and Responses `input_image` parts (data URLs),
//! Anthropic `image` blocks (a base64 source). Lets a test see what
//! reached the model.

use serde::Serialize;
use serde_json::Value;

/// One image a request's user messages carried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordedImage {
    /// Its media type (`image/png`).
    pub media_type: String,
    /// Its base64 data.
    pub data: String,
}

/// Every image in `body`'s messages (`messages` or `input`), in order.
pub(crate) fn images_in(body: &Value) -> Vec<RecordedImage> {
    let messages = body
        .get("messages")
        .or_else(|| body.get("input"))
        .and_then(Value::as_array);
    let parts = messages
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten();
    parts.filter_map(image_of).collect()
}

fn image_of(part: &Value) -> Option<RecordedImage> {
    match part.get("type")?.as_str()? {
        "image_url" => from_data_url(part.get("image_url")?.get("url")?.as_str()?),
        "input_image" => from_data_url(part.get("image_url")?.as_str()?),
        "image" => {
            let source = part.get("source")?;
            Some(RecordedImage {
                media_type: source.get("media_type")?.as_str()?.to_owned(),
                data: source.get("data")?.as_str()?.to_owned(),
            })
        }
        _ => None,
    }
}

fn from_data_url(url: &str) -> Option<RecordedImage> {
    let (media_type, data) = url.strip_prefix("data:")?.split_once(";base64,")?;
    Some(RecordedImage {
        media_type: media_type.to_owned(),
        data: data.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn images_are_found_in_each_wire() {
        let png = RecordedImage {
            media_type: "image/png".into(),
            data: "aGk=".into(),
        };
        let chat = json!({"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
            {"type": "text", "text": "x"}]}]});
        let responses = json!({"input": [{"type": "message", "role": "user", "content": [
            {"type": "input_image", "image_url": "data:image/png;base64,aGk="}]}]});
        let anthropic = json!({"messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}}]}]});
        for body in [chat, responses, anthropic] {
            assert_eq!(images_in(&body), vec![png.clone()], "{body}");
        }
        assert!(images_in(&json!({"messages": [{"role": "user", "content": "x"}]})).is_empty());
    }
}

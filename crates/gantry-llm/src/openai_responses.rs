//! The OpenAI Responses API client (`POST {base}/responses`, streamed over
//! SSE with typed `event:` lines). Stateless: every request carries the whole
//! conversation with `store: false`, and reasoning comes back encrypted so it
//! can be replayed on the next request.

mod parse;
pub(crate) mod request;

use std::sync::Arc;

use reqwest::header::AUTHORIZATION;

use self::parse::EventParser;
use crate::sse::{self, Endpoint};
use crate::{ClientConfig, ModelClient, ModelError, ModelRequest, ModelStream};

/// A [`ModelClient`] for the Responses API. Cheap to clone.
#[derive(Clone)]
pub struct OpenAiResponsesClient {
    endpoint: Arc<Endpoint>,
}

impl std::fmt::Debug for OpenAiResponsesClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiResponsesClient")
            .field("url", &self.endpoint.url.as_str())
            .finish()
    }
}

impl OpenAiResponsesClient {
    /// Builds a client; fails with [`ModelError::Config`] on a bad URL or header.
    pub fn new(config: ClientConfig) -> Result<Self, ModelError> {
        let secret = config
            .api_key
            .as_ref()
            .map(|key| (AUTHORIZATION, format!("Bearer {key}")));
        let endpoint = Endpoint::new(
            &config,
            "/responses",
            secret,
            &[],
            std::sync::Arc::new(request::body),
            None,
        )?;
        Ok(Self { endpoint })
    }

    /// The full `.../responses` URL requests go to.
    pub fn endpoint(&self) -> &str {
        self.endpoint.url.as_str()
    }
}

impl ModelClient for OpenAiResponsesClient {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        sse::stream::<EventParser>(self.endpoint.clone(), request)
    }
}

/// How a reasoning item travels in [`ReasoningBlock::opaque`](crate::ReasoningBlock):
/// a JSON object `{"id": "rs_...", "encrypted_content": "..."}`. Being JSON
/// with that key tells this API's blocks apart from other providers' opaque
/// data (Anthropic's `redacted_thinking.data` is a bare base64 string).
mod opaque {
    use serde_json::{Value, json};

    /// The opaque string for a reasoning item.
    pub(super) fn encode(id: Option<&str>, encrypted_content: &str) -> String {
        json!({"id": id, "encrypted_content": encrypted_content}).to_string()
    }

    /// The `encrypted_content` of an opaque string made by [`encode`], or
    /// `None` if it came from elsewhere.
    pub(super) fn decode(opaque: &str) -> Option<String> {
        if !opaque.starts_with('{') {
            return None;
        }
        match serde_json::from_str::<Value>(opaque)
            .ok()?
            .get("encrypted_content")?
        {
            Value::String(s) => Some(s.clone()),
            _ => None,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn round_trip_and_foreign_data() {
            let o = encode(Some("rs_1"), "gAAAA==");
            let v: Value = serde_json::from_str(&o).unwrap();
            assert_eq!(v, json!({"id": "rs_1", "encrypted_content": "gAAAA=="}));
            assert_eq!(decode(&o).as_deref(), Some("gAAAA=="));
            assert_eq!(decode("EmwKAhgBEgyZ"), None);
            assert_eq!(decode(r#"{"data":"x"}"#), None);
            assert_eq!(decode("{broken"), None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_is_responses_with_or_without_version() {
        let url = |base: &str| {
            OpenAiResponsesClient::new(ClientConfig::new(base)).map(|c| c.endpoint().to_owned())
        };
        assert_eq!(url("http://h:1").as_deref(), Ok("http://h:1/v1/responses"));
        assert_eq!(
            url("https://api.openai.com/v1/").as_deref(),
            Ok("https://api.openai.com/v1/responses")
        );
        assert!(matches!(url("nope"), Err(ModelError::Config(_))));
    }
}

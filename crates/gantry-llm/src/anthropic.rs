//! The Anthropic Messages client (`POST {base}/messages`, streamed over SSE
//! with `event:` lines).
//!
//! Reasoning: a request with [`ModelRequest::reasoning`] set turns on extended
//! thinking with a token budget chosen by effort (see [`thinking_budget`]);
//! thinking blocks come back as [`ModelEvent::ReasoningDelta`]s closed by a
//! [`ModelEvent::ReasoningEnd`] carrying the block's signature (or, for
//! redacted thinking, its opaque data), which the next request sends back.
//!
//! [`ModelEvent::ReasoningDelta`]: crate::ModelEvent::ReasoningDelta
//! [`ModelEvent::ReasoningEnd`]: crate::ModelEvent::ReasoningEnd

mod parse;
pub(crate) mod request;

use std::sync::Arc;

use reqwest::header::HeaderName;

use self::parse::MessageParser;
use crate::sse::{self, Endpoint};
use crate::{ClientConfig, ModelClient, ModelError, ModelRequest, ModelStream};

pub use self::request::{DEFAULT_MAX_TOKENS, thinking_budget};

/// The API version sent as `anthropic-version` unless the config overrides it.
pub const API_VERSION: &str = "2023-06-01";

/// A [`ModelClient`] for the Anthropic Messages API. Cheap to clone.
#[derive(Clone)]
pub struct AnthropicClient {
    endpoint: Arc<Endpoint>,
}

impl std::fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicClient")
            .field("url", &self.endpoint.url.as_str())
            .finish()
    }
}

impl AnthropicClient {
    /// Builds a client; fails with [`ModelError::Config`] on a bad URL or header.
    /// The key goes in `x-api-key`; extra headers of the config (e.g.
    /// `anthropic-beta`, or another `anthropic-version`) are added last, so
    /// they win.
    pub fn new(config: ClientConfig) -> Result<Self, ModelError> {
        let secret = config
            .api_key
            .as_ref()
            .map(|key| (HeaderName::from_static("x-api-key"), key.clone()));
        let version = [("anthropic-version".to_owned(), API_VERSION.to_owned())];
        let endpoint = Endpoint::new(
            &config,
            "/messages",
            secret,
            &version,
            std::sync::Arc::new(request::body),
            None,
        )?;
        Ok(Self { endpoint })
    }

    /// The full `.../messages` URL requests go to.
    pub fn endpoint(&self) -> &str {
        self.endpoint.url.as_str()
    }
}

impl ModelClient for AnthropicClient {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        sse::stream::<MessageParser>(self.endpoint.clone(), request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(base: &str) -> String {
        AnthropicClient::new(ClientConfig::new(base))
            .map(|c| c.endpoint().to_owned())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn base_url_with_or_without_version() {
        assert_eq!(
            url("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            url("https://api.anthropic.com/v1/"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(url("http://h:1/v1/messages"), "http://h:1/v1/messages");
    }

    #[test]
    fn version_header_is_set_and_can_be_overridden() {
        let mut config = ClientConfig::new("http://h:1");
        config.api_key = Some("sk-ant".into());
        let client = AnthropicClient::new(config.clone()).unwrap();
        let h = &client.endpoint.headers;
        assert_eq!(h["anthropic-version"], API_VERSION);
        assert_eq!(h["x-api-key"], "sk-ant");
        assert!(h["x-api-key"].is_sensitive());

        config
            .extra_headers
            .push(("Anthropic-Version".into(), "2099-01-01".into()));
        config
            .extra_headers
            .push(("anthropic-beta".into(), "x-2025".into()));
        let client = AnthropicClient::new(config).unwrap();
        let h = &client.endpoint.headers;
        assert_eq!(h["anthropic-version"], "2099-01-01");
        assert_eq!(h.get_all("anthropic-version").iter().count(), 1);
        assert_eq!(h["anthropic-beta"], "x-2025");
    }
}

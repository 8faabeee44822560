//! The OpenAI Chat Completions client (`POST {base}/chat/completions`,
//! streamed over SSE). It also serves Ollama, vLLM, OpenRouter, LM Studio,
//! llama.cpp and any other OpenAI-compatible server: a streamed request
//! answered with an empty stream is asked again unstreamed (a local server
//! that cannot stream tool calls, or that refuses a prompt over its
//! context window without a word), and `stream = false` asks so always.

mod parse;
pub(crate) mod request;

use std::sync::Arc;

use reqwest::header::AUTHORIZATION;

use self::parse::ChunkParser;
use crate::sse::{self, Endpoint};
use crate::{ClientConfig, ModelClient, ModelError, ModelRequest, ModelStream};

/// A [`ModelClient`] for the Chat Completions API. Cheap to clone.
#[derive(Clone)]
pub struct OpenAiChatClient {
    endpoint: Arc<Endpoint>,
}

impl std::fmt::Debug for OpenAiChatClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChatClient")
            .field("url", &self.endpoint.url.as_str())
            .finish()
    }
}

impl OpenAiChatClient {
    /// Builds a client; fails with [`ModelError::Config`] on a bad URL or header.
    pub fn new(config: ClientConfig) -> Result<Self, ModelError> {
        let secret = config
            .api_key
            .as_ref()
            .map(|key| (AUTHORIZATION, format!("Bearer {key}")));
        let choice = config.tool_choice.clone();
        let unstreamed: crate::sse::BodyFn = {
            let choice = choice.clone();
            Arc::new(move |r| request::body(r, choice.as_deref(), false))
        };
        let (body, fallback) = if config.stream {
            let streamed: crate::sse::BodyFn =
                Arc::new(move |r| request::body(r, choice.as_deref(), true));
            (streamed, Some(unstreamed))
        } else {
            (unstreamed, None)
        };
        let endpoint = Endpoint::new(&config, "/chat/completions", secret, &[], body, fallback)?;
        Ok(Self { endpoint })
    }

    /// The full `.../chat/completions` URL requests go to.
    pub fn endpoint(&self) -> &str {
        self.endpoint.url.as_str()
    }
}

impl ModelClient for OpenAiChatClient {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        sse::stream::<ChunkParser>(self.endpoint.clone(), request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{endpoint, is_version_segment};

    fn url(base: &str) -> String {
        endpoint(base, "/chat/completions")
            .map(|u| u.to_string())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn base_url_with_or_without_version() {
        assert_eq!(url("http://h:1"), "http://h:1/v1/chat/completions");
        assert_eq!(url("http://h:1/"), "http://h:1/v1/chat/completions");
        assert_eq!(url("http://h:1/v1"), "http://h:1/v1/chat/completions");
        assert_eq!(
            url("http://h:1/api/v1/"),
            "http://h:1/api/v1/chat/completions"
        );
        assert_eq!(
            url("https://h/v1beta/openai"),
            "https://h/v1beta/openai/v1/chat/completions"
        );
        assert_eq!(url("https://h/v1beta"), "https://h/v1beta/chat/completions");
        assert_eq!(
            url("http://h:1/v1/chat/completions"),
            "http://h:1/v1/chat/completions"
        );
        assert_eq!(url("http://h:1/vx"), "http://h:1/vx/v1/chat/completions");
        assert_eq!(
            url("http://h:1/v1?x=1"),
            "http://h:1/v1/chat/completions?x=1"
        );
    }

    #[test]
    fn bad_urls_and_headers_are_config_errors() {
        for bad in ["", "localhost:11434", "ftp://h/v1", "http://"] {
            assert!(
                matches!(
                    endpoint(bad, "/chat/completions"),
                    Err(ModelError::Config(_))
                ),
                "{bad}"
            );
        }
        let mut config = ClientConfig::new("http://h:1");
        config.extra_headers.push(("bad name".into(), "x".into()));
        assert!(matches!(
            OpenAiChatClient::new(config),
            Err(ModelError::Config(_))
        ));
    }

    #[test]
    fn debug_hides_the_key() {
        let mut config = ClientConfig::new("http://h:1");
        config.api_key = Some("sk-secret".into());
        assert!(!format!("{config:?}").contains("sk-secret"));
    }

    #[test]
    fn version_segments() {
        for yes in ["v1", "v2", "v1beta", "v10alpha2"] {
            assert!(is_version_segment(yes), "{yes}");
        }
        for no in ["", "v", "vx", "api", "v1.0", "version1"] {
            assert!(!is_version_segment(no), "{no}");
        }
    }
}

//! How to reach a provider: what every client is built from.

use crate::RetryPolicy;

/// Base URL, credentials, retries and extra headers of one provider.
#[derive(Clone, PartialEq)]
pub struct ClientConfig {
    /// Server URL, with or without the version segment: `http://localhost:11434`,
    /// `https://api.openai.com/v1` and `https://openrouter.ai/api/v1` all work.
    pub base_url: String,
    /// The API key, sent the way the provider wants it.
    pub api_key: Option<String>,
    /// Retries of failed requests (before the first streamed byte).
    pub retry: RetryPolicy,
    /// Extra headers sent with every request (e.g. `HTTP-Referer` for OpenRouter).
    pub extra_headers: Vec<(String, String)>,
    /// Chat Completions' `tool_choice` when tools are offered: `auto`,
    /// `required`, `none`, or a tool's name (that tool, when offered).
    /// Some local servers ignore `tools` without it. `None`: not sent.
    pub tool_choice: Option<String>,
    /// Whether answers are streamed (Chat Completions: `false` asks for
    /// whole answers, for a server that cannot stream tool calls).
    pub stream: bool,
}

impl ClientConfig {
    /// A config for `base_url` with no key, default retries and no extra headers.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            retry: RetryPolicy::default(),
            extra_headers: Vec::new(),
            tool_choice: None,
            stream: true,
        }
    }
}

// Hand-written so the API key never lands in logs.
impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("retry", &self.retry)
            .field("extra_headers", &self.extra_headers)
            .field("tool_choice", &self.tool_choice)
            .field("stream", &self.stream)
            .finish()
    }
}

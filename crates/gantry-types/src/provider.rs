//! Providers: where models are served from and how to authenticate there.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Which API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// OpenAI Chat Completions (also Ollama, vLLM, OpenRouter, ...).
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
}

impl ProviderKind {
    /// Every kind, in the order they are listed to users.
    pub const ALL: [ProviderKind; 3] = [
        ProviderKind::OpenaiChat,
        ProviderKind::OpenaiResponses,
        ProviderKind::Anthropic,
    ];

    /// The wire name (`openai-chat`, `openai-responses`, `anthropic`).
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenaiChat => "openai-chat",
            ProviderKind::OpenaiResponses => "openai-responses",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    /// The vendor's own endpoint, used when a provider names no base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenaiChat | ProviderKind::OpenaiResponses => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The environment variable the vendor's own tools read the key from.
    pub fn default_api_key_env(self) -> &'static str {
        match self {
            ProviderKind::OpenaiChat | ProviderKind::OpenaiResponses => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// True if both kinds serve the same vendor's models (the two OpenAI APIs do).
    pub fn same_vendor(self, other: ProviderKind) -> bool {
        let vendor = |k: ProviderKind| matches!(k, ProviderKind::Anthropic);
        vendor(self) == vendor(other)
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProviderKind {
    type Err = String;

    /// Parses a wire name; the error names the allowed kinds.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProviderKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown provider kind `{s}` (expected one of: {})",
                    ProviderKind::ALL.map(ProviderKind::as_str).join(", ")
                )
            })
    }
}

/// One provider: a named endpoint of some [`ProviderKind`] with its credentials.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderConfig {
    /// Unique name, the `provider` of `provider/model` ids.
    pub name: String,
    /// Which API it speaks.
    pub kind: ProviderKind,
    /// Server URL; the kind's default endpoint when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// A literal API key. Secret: masked whenever providers are listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The environment variable holding the API key (its value is never stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Extra headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Models this provider serves (besides those asked for as `name/model`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// Chat Completions' `tool_choice` sent with tools (`auto`, `required`,
    /// `none`, or a tool's name): some local servers ignore tools without
    /// it. Not sent when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<String>,
    /// Whether answers are streamed; `false` asks for whole ones (a server
    /// that cannot stream tool calls).
    #[serde(default = "streamed", skip_serializing_if = "is_streamed")]
    pub stream: bool,
}

fn streamed() -> bool {
    true
}

fn is_streamed(stream: &bool) -> bool {
    *stream
}

impl ProviderConfig {
    /// A provider of `kind` named `name`, on the kind's default endpoint, with no key.
    pub fn new(name: impl Into<String>, kind: ProviderKind) -> Self {
        Self {
            name: name.into(),
            kind,
            base_url: None,
            api_key: None,
            api_key_env: None,
            headers: BTreeMap::new(),
            models: Vec::new(),
            tool_choice: None,
            stream: true,
        }
    }

    /// The base URL requests go to.
    pub fn base_url_or_default(&self) -> &str {
        self.base_url
            .as_deref()
            .filter(|u| !u.trim().is_empty())
            .unwrap_or(self.kind.default_base_url())
    }

    /// The environment variable to read the key from: the configured one, or,
    /// for a provider on the vendor's own endpoint without a literal key, the
    /// vendor's usual variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`).
    pub fn key_env(&self) -> Option<&str> {
        if let Some(var) = self.api_key_env.as_deref().filter(|v| !v.is_empty()) {
            return Some(var);
        }
        let official = self.base_url_or_default() == self.kind.default_base_url();
        (self.api_key.is_none() && official).then(|| self.kind.default_api_key_env())
    }

    /// A copy safe to show: a literal key becomes `sk-...abcd`; the env var
    /// name is kept (it is not secret).
    pub fn masked(&self) -> Self {
        Self {
            api_key: self.api_key.as_deref().map(mask_key),
            ..self.clone()
        }
    }
}

/// `sk-proj-abcdef...wxyz` -> `sk-...wxyz`; short keys are hidden entirely.
pub fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() < 12 {
        return "***".to_owned();
    }
    let head: String = chars[..3].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}...{tail}")
}

// Hand-written so a literal key never lands in logs.
impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_deref().map(mask_key))
            .field("api_key_env", &self.api_key_env)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("models", &self.models)
            .field("tool_choice", &self.tool_choice)
            .field("stream", &self.stream)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_errors_name_the_allowed_kinds() {
        for kind in ProviderKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(kind.as_str().parse::<ProviderKind>(), Ok(kind));
        }
        let err = "openai".parse::<ProviderKind>().unwrap_err();
        assert!(
            err.contains("openai-chat, openai-responses, anthropic"),
            "{err}"
        );
    }

    #[test]
    fn masking_hides_literal_keys_but_not_env_names() {
        let mut p = ProviderConfig::new("a", ProviderKind::Anthropic);
        p.api_key = Some("sk-ant-0123456789abcd".into());
        p.api_key_env = Some("ANTHROPIC_API_KEY".into());
        let m = p.masked();
        assert_eq!(m.api_key.as_deref(), Some("sk-...abcd"));
        assert_eq!(m.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert_eq!(mask_key("short"), "***");
        assert!(!format!("{p:?}").contains("0123456789"));
    }

    #[test]
    fn defaults_per_kind() {
        let p = ProviderConfig::new("o", ProviderKind::OpenaiChat);
        assert_eq!(p.base_url_or_default(), "https://api.openai.com/v1");
        assert_eq!(p.key_env(), Some("OPENAI_API_KEY"));
        let mut local = p.clone();
        local.base_url = Some("http://localhost:11434/v1".into());
        assert_eq!(local.key_env(), None);
    }
}

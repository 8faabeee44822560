//! How full a model's context is. Estimates come from a tokenizer where one
//! is public (OpenAI's, via tiktoken) and from text length elsewhere; once the
//! provider reports a request's usage, that is the truth the next estimate
//! builds on.

use std::sync::LazyLock;

use gantry_llm::Message;
use gantry_types::ToolSpec;
use serde::Serialize;
use tiktoken_rs::CoreBPE;

/// Tokens added per message for role and framing (OpenAI's documented overhead).
const PER_MESSAGE: u64 = 4;

/// Tokens counted per image: about what a large image costs on the
/// providers' own scales (Anthropic's ~1,600 at its size cap).
const IMAGE_TOKENS: u64 = 1_600;

/// How full a thread's context is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ContextUsage {
    /// Estimated tokens the next request would carry.
    pub used: u64,
    /// The model's context window (0 when unknown).
    pub limit: u64,
    /// `used / limit` in percent (0 when the limit is unknown).
    pub percent: f64,
}

impl ContextUsage {
    /// Usage of `used` tokens out of `limit`.
    pub fn new(used: u64, limit: u64) -> Self {
        let percent = if limit == 0 {
            0.0
        } else {
            used as f64 * 100.0 / limit as f64
        };
        Self {
            used,
            limit,
            percent,
        }
    }
}

/// OpenAI's current encoding, loaded on first use: building it takes tens of
/// milliseconds, which a short `gantry exec` must not pay when the context is
/// nowhere near full.
static O200K: LazyLock<Option<CoreBPE>> = LazyLock::new(|| tiktoken_rs::o200k_base().ok());

/// Counts tokens for one model.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counter {
    openai: bool,
}

impl Counter {
    /// A counter for `model` (an id, optionally `provider/model`).
    pub(crate) fn for_model(model: &str) -> Self {
        let id = model.rsplit('/').next().unwrap_or(model);
        let openai = ["gpt-", "o1", "o3", "o4", "chatgpt", "codex"]
            .iter()
            .any(|p| id.starts_with(p));
        Self { openai }
    }

    /// A cheap estimate: about four bytes per token.
    pub(crate) fn rough(text: &str) -> u64 {
        text.len().div_ceil(4) as u64
    }

    /// Tokens of `text`: exact for OpenAI models, estimated for the rest.
    pub(crate) fn text(&self, text: &str) -> u64 {
        match O200K.as_ref().filter(|_| self.openai) {
            Some(bpe) => bpe.encode_ordinary(text).len() as u64,
            None => Self::rough(text),
        }
    }

    /// Tokens a request with this prompt would carry. `precise` uses the
    /// tokenizer; otherwise the cheap estimate.
    pub(crate) fn request(
        &self,
        instructions: Option<&str>,
        messages: &[Message],
        tools: &[ToolSpec],
        precise: bool,
    ) -> u64 {
        let count = |t: &str| {
            if precise {
                self.text(t)
            } else {
                Self::rough(t)
            }
        };
        let mut total = instructions.map_or(0, |i| count(i) + PER_MESSAGE);
        total += self.messages(messages, precise);
        for tool in tools {
            total +=
                count(&tool.name) + count(&tool.description) + count(&tool.parameters.to_string());
        }
        total
    }

    /// Tokens of `messages` alone.
    pub(crate) fn messages(&self, messages: &[Message], precise: bool) -> u64 {
        let count = |t: &str| {
            if precise {
                self.text(t)
            } else {
                Self::rough(t)
            }
        };
        messages
            .iter()
            .map(|m| {
                PER_MESSAGE
                    + match m {
                        Message::User { text, images } => {
                            count(text) + IMAGE_TOKENS * images.len() as u64
                        }
                        Message::Assistant {
                            reasoning,
                            text,
                            tool_calls,
                        } => {
                            count(text)
                                + reasoning.iter().map(|r| count(&r.text)).sum::<u64>()
                                + tool_calls
                                    .iter()
                                    .map(|c| count(&c.name) + count(&c.arguments))
                                    .sum::<u64>()
                        }
                        Message::ToolResult { output, .. } => count(output),
                    }
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_models_are_counted_with_the_tokenizer() {
        let c = Counter::for_model("openai/gpt-4.1");
        assert_eq!(c.text("hello world"), 2);
        assert!(!Counter::for_model("claude-sonnet-4-5").openai);
        assert_eq!(Counter::rough("12345678"), 2);
    }

    #[test]
    fn usage_percent() {
        assert_eq!(ContextUsage::new(50, 200).percent, 25.0);
        assert_eq!(ContextUsage::new(50, 0).percent, 0.0);
    }
}

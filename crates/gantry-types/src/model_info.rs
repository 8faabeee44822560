//! What is known about a model: capabilities, prices, limits (the models.dev shape).

use serde::{Deserialize, Serialize};

use crate::Usage;

/// A model's catalog entry, in the shape of models.dev.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelInfo {
    /// Id as the provider knows it (`gpt-4.1`, `claude-sonnet-4-5`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Model family (`gpt`, `claude`, `o`, ...).
    pub family: String,
    /// Accepts file/image attachments.
    pub attachment: bool,
    /// Has a reasoning effort setting.
    pub reasoning: bool,
    /// Supports tool calls.
    pub tool_call: bool,
    /// Accepts a temperature.
    pub temperature: bool,
    /// `YYYY-MM-DD`.
    pub release_date: String,
    /// Input and output modalities.
    pub modalities: Modalities,
    /// Prices in USD per million tokens.
    pub cost: ModelCost,
    /// Token limits.
    pub limit: ModelLimit,
}

/// Input and output modalities (`text`, `image`, `audio`, `pdf`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Modalities {
    /// What the model reads.
    pub input: Vec<String>,
    /// What the model writes.
    pub output: Vec<String>,
}

/// Prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelCost {
    /// Uncached input.
    pub input: f64,
    /// Output (reasoning included).
    pub output: f64,
    /// Input served from cache.
    pub cache_read: f64,
    /// Input written to cache.
    pub cache_write: f64,
}

/// Token limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelLimit {
    /// Context window.
    pub context: u64,
    /// Most output tokens per request.
    pub output: u64,
}

impl ModelCost {
    /// What `usage` costs in USD. Cached and cache-written tokens are part of
    /// `input_tokens` and billed at their own rates (the input rate when the
    /// catalog gives none).
    pub fn of(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let written = usage.cache_write_tokens.min(usage.input_tokens - cached);
        let plain = usage.input_tokens - cached - written;
        let rate = |r: f64| if r > 0.0 { r } else { self.input };
        (plain as f64 * self.input
            + cached as f64 * rate(self.cache_read)
            + written as f64 * rate(self.cache_write)
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_bills_cached_and_written_tokens_at_their_rates() {
        let cost = ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cached_input_tokens: 500_000,
            cache_write_tokens: 100_000,
            reasoning_tokens: 0,
        };
        // 400k plain * 3 + 500k * 0.3 + 100k * 3.75 + 100k * 15, per million
        let expected = 1.2 + 0.15 + 0.375 + 1.5;
        assert!((cost.of(&usage) - expected).abs() < 1e-9);
    }
}

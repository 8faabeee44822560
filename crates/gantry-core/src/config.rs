//! Engine settings and the model resolver port.

use std::path::PathBuf;
use std::sync::Arc;

use gantry_llm::ModelClient;
use gantry_tools::ToolLimits;
use gantry_types::ModelInfo;

/// Tunables of the engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Model rounds a turn may run before it is stopped.
    pub max_rounds: u32,
    /// Model used when a thread is created without one.
    pub default_model: String,
    /// Limits for tool calls.
    pub tool_limits: ToolLimits,
    /// Per-subscriber buffer of live notifications; a subscriber further
    /// behind is told it lagged.
    pub subscriber_buffer: usize,
    /// Share of the model's context window (0..1) a request may fill before
    /// the history is compacted first.
    pub compact_at: f64,
    /// Reasoning effort asked of models that support it (`low`, `medium`,
    /// `high`, ...); `None` leaves it to the provider.
    pub reasoning: Option<String>,
    /// Where the engine keeps files of its own (agents' installed skills
    /// under `agents/<id>/skills`). `None`: installing skill packages is
    /// refused.
    pub data_dir: Option<PathBuf>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            max_rounds: 50,
            default_model: "gpt-4.1".to_owned(),
            tool_limits: ToolLimits::default(),
            subscriber_buffer: 4096,
            compact_at: 0.8,
            reasoning: None,
            data_dir: None,
        }
    }
}

/// Finds the client that serves a model id.
pub trait ModelResolver: Send + Sync {
    /// The client for `model`, or a one-line reason it has none.
    fn resolve(&self, model: &str) -> Result<Arc<dyn ModelClient>, String>;

    /// What the catalog knows about `model` (prices, context window), if anything.
    fn model_info(&self, _model: &str) -> Option<ModelInfo> {
        None
    }

    /// The reasoning effort to send for `model` when `requested` is asked:
    /// `requested` if the catalog says the model takes one, else none (a
    /// model without the setting, or unknown to the catalog, gets none).
    fn reasoning_for(&self, model: &str, requested: Option<&str>) -> Option<String> {
        let requested = requested.filter(|r| !r.trim().is_empty())?;
        self.model_info(model)
            .filter(|info| info.reasoning)
            .map(|_| requested.to_owned())
    }
}

/// Serves every model id with one client (one provider).
pub struct SingleModel(pub Arc<dyn ModelClient>);

impl ModelResolver for SingleModel {
    fn resolve(&self, _model: &str) -> Result<Arc<dyn ModelClient>, String> {
        Ok(self.0.clone())
    }
}

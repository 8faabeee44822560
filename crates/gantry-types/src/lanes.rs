//! Who runs a lane's tool calls: the engine, a client, or both.

use serde::{Deserialize, Serialize};

use crate::Lane;

/// How a lane's tool calls are handled (seed 001 `LaneHandlerConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlerMode {
    /// The engine runs them.
    #[default]
    Internal,
    /// They are published as external tasks; a client completes them.
    External,
    /// The engine runs them and also publishes them, for clients to observe.
    Hybrid,
}

/// The handler of one lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneHandler {
    /// The lane.
    pub lane: Lane,
    /// Who handles its calls.
    pub mode: HandlerMode,
    /// How long an external task waits for its client before it fails.
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
}

/// An external task's default time limit: 60 s.
pub const DEFAULT_EXTERNAL_TIMEOUT_MS: u64 = 60_000;

fn default_timeout() -> u64 {
    DEFAULT_EXTERNAL_TIMEOUT_MS
}

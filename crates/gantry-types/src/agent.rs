//! Agents: named configurations that threads run under.

use serde::{Deserialize, Serialize};

use crate::AgentId;

/// The agent SDK Gantry itself offers (the runner protocol's `agent_sdk`).
pub const GANTRY_SDK: &str = "gantry";

/// A named configuration: engine, default model and reasoning level,
/// instructions. Its skills live in its own skills dir, installed from
/// packages; its threads discover them next to the workspace's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    /// Its id.
    pub id: AgentId,
    /// Human-readable name (the id when none was given).
    pub name: String,
    /// Which agent SDK runs it; Gantry runs [`GANTRY_SDK`].
    pub sdk: String,
    /// Model its threads use unless they name one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Reasoning effort its threads ask for unless they name one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Instructions its threads get unless they bring their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Creation time, unix milliseconds.
    pub created_at: i64,
    /// Last change, unix milliseconds.
    pub updated_at: i64,
}

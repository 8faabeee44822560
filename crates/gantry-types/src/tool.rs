//! How a tool presents itself to the model.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool's name, description and JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema (an object schema) of its arguments.
    pub parameters: Value,
}

//! A turn's checkpoint as the log records it: the workspace's state before
//! the turn first changed it.

use serde::{Deserialize, Serialize};

/// What a `CheckpointRecorded` event says about one checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// The checkpoint's id in the thread's store (hex).
    pub id: String,
    /// Paths (relative to the workspace) changed since the checkpoint before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_changed: Vec<String>,
    /// Paths of the workspace the checkpoint does not hold, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_kept: Vec<NotKeptFile>,
}

/// A path a checkpoint does not hold: rewinding leaves it as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotKeptFile {
    /// Relative to the workspace.
    pub path: String,
    /// Why, in words ("too large (12582912 bytes)", "special file",
    /// "nested repository").
    pub reason: String,
}

//! Checkpoints on the wire: a thread's list, and what a rewind answers.

use gantry_core::CheckpointEntry;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ThreadSummary;

/// `GET /v1/threads/{id}/checkpoints`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckpointList {
    /// Oldest first: one per turn that changed the workspace.
    pub checkpoints: Vec<CheckpointView>,
}

/// One checkpoint: the workspace before its turn's first change.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckpointView {
    /// Its id (hex), what rewind and fork take.
    pub id: String,
    /// The turn it was taken in.
    pub turn_id: String,
    /// When that turn started (ms since the epoch).
    pub at: i64,
    /// Paths changed since the checkpoint before.
    pub files_changed: Vec<String>,
    /// Paths it does not hold, and why (a rewind leaves them as they are).
    pub not_kept: Vec<NotKeptView>,
}

/// A path a checkpoint does not hold.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotKeptView {
    /// Relative to the workspace.
    pub path: String,
    /// Why.
    pub reason: String,
}

impl From<&CheckpointEntry> for CheckpointView {
    fn from(entry: &CheckpointEntry) -> Self {
        Self {
            id: entry.checkpoint.id.clone(),
            turn_id: entry.turn_id.as_str().to_owned(),
            at: entry.at,
            files_changed: entry.checkpoint.files_changed.clone(),
            not_kept: entry
                .checkpoint
                .not_kept
                .iter()
                .map(|n| NotKeptView {
                    path: n.path.clone(),
                    reason: n.reason.clone(),
                })
                .collect(),
        }
    }
}

/// `POST /v1/threads/{id}/rewind`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RewindRequest {
    /// The checkpoint to go back to.
    pub checkpoint: String,
    /// Rewind even over files someone else changed since the agent's last
    /// turn [default: false, refused with 409 naming them].
    #[serde(default)]
    pub force: bool,
}

/// What a rewind did.
#[derive(Debug, Serialize, ToSchema)]
pub struct RewindAnswer {
    /// The thread continuing from the checkpoint (the source keeps its
    /// later turns, readable as the branch left).
    pub thread: ThreadSummary,
    /// The paths the rewind changed.
    pub restored: Vec<String>,
}

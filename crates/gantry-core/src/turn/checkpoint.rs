//! A turn's checkpoint: the workspace recorded before the turn's first tool
//! that can change it, so a turn that only reads costs nothing; and, at the
//! turn's end, the state the agent left, which a rewind compares with.

use std::path::PathBuf;
use std::sync::Arc;

use gantry_checkpoint::CheckpointStore;
use gantry_types::{CheckpointRecord, EventPayload, NotKeptFile};

use super::Loop;

/// Where a thread's checkpoints are kept: `<data_dir>/checkpoints/<thread>.git`.
pub(crate) fn store_dir(data_dir: &std::path::Path, thread: &gantry_types::ThreadId) -> PathBuf {
    data_dir
        .join("checkpoints")
        .join(format!("{}.git", thread.as_str()))
}

impl Loop<'_> {
    /// Records the workspace once per turn, before the first tool that may
    /// change it. A store that cannot be kept is logged and the tool still
    /// runs: a checkpoint is a way back, never a reason to stop the agent.
    pub(super) async fn checkpoint_before_write(&self) {
        self.checkpoint
            .get_or_init(|| async {
                let store = self.checkpoint_store()?;
                let turn = self.spec.turn_id.clone();
                let message = format!("turn {}", turn.as_str());
                let recorded = {
                    let store = store.clone();
                    tokio::task::spawn_blocking(move || store.record(&message)).await
                };
                match recorded {
                    Ok(Ok(checkpoint)) => {
                        self.em
                            .emit(EventPayload::CheckpointRecorded {
                                turn_id: turn,
                                checkpoint: record_of(checkpoint),
                            })
                            .await;
                        Some(store)
                    }
                    Ok(Err(error)) => {
                        tracing::warn!(%error, "checkpoint not recorded");
                        None
                    }
                    Err(error) => {
                        tracing::warn!(%error, "checkpoint not recorded");
                        None
                    }
                }
            })
            .await;
    }

    /// At the turn's end, remembers the workspace as the agent left it, if
    /// the turn recorded a checkpoint (only such a turn can have changed it).
    pub(super) async fn mark_left(&self) {
        let Some(Some(store)) = self.checkpoint.get().cloned() else {
            return;
        };
        let marked = tokio::task::spawn_blocking(move || store.mark_left()).await;
        if let Ok(Err(error)) = marked {
            tracing::warn!(%error, "workspace state at the turn's end not recorded");
        }
    }

    fn checkpoint_store(&self) -> Option<Arc<CheckpointStore>> {
        let data_dir = self.shared.config.data_dir.as_ref()?;
        let dir = store_dir(data_dir, &self.spec.thread_id);
        match CheckpointStore::open(&dir, &self.spec.cwd) {
            Ok(store) => Some(Arc::new(store)),
            Err(error) => {
                tracing::warn!(%error, "checkpoint store unavailable");
                None
            }
        }
    }
}

/// A checkpoint as the log records it.
pub(crate) fn record_of(checkpoint: gantry_checkpoint::Checkpoint) -> CheckpointRecord {
    CheckpointRecord {
        id: checkpoint.id.to_string(),
        files_changed: checkpoint
            .files_changed
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect(),
        not_kept: checkpoint
            .not_kept
            .iter()
            .map(|n| NotKeptFile {
                path: n.path.to_string_lossy().into_owned(),
                reason: n.reason.to_string(),
            })
            .collect(),
    }
}

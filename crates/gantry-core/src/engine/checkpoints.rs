//! Checkpoints through the engine's API: a thread's checkpoints, a rewind
//! of its workspace to one, and a fork from one into a new directory.

use std::sync::Arc;

use gantry_checkpoint::{CheckpointId, CheckpointStore};
use gantry_types::{CheckpointRecord, Thread, ThreadId, ThreadView, TurnId, TurnStatus};

use super::{EngineError, Threads};

/// One checkpoint of a thread, as [`Threads::checkpoints`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointEntry {
    /// The turn it was taken in, before the turn's first change.
    pub turn_id: TurnId,
    /// When that turn started (ms since the epoch).
    pub at: i64,
    /// The checkpoint.
    pub checkpoint: CheckpointRecord,
}

/// What a rewind did.
#[derive(Debug, Clone)]
pub enum Rewound {
    /// The workspace is as it was at the checkpoint, and the conversation
    /// continues in `thread`: the source's turns before the checkpoint's.
    /// The source thread keeps every turn, readable as the branch left.
    Done {
        /// The thread that continues from the checkpoint.
        thread: Box<Thread>,
        /// The paths the rewind changed.
        restored: Vec<String>,
    },
    /// Refused: these paths changed since the agent last left the
    /// workspace, by someone else; force the rewind to lose them.
    Conflicts(Vec<String>),
}

impl Threads<'_> {
    /// The thread's checkpoints, oldest first.
    pub async fn checkpoints(self, thread: &ThreadId) -> Result<Vec<CheckpointEntry>, EngineError> {
        let view = self.read(thread).await?;
        Ok(view
            .turns
            .iter()
            .filter_map(|t| {
                Some(CheckpointEntry {
                    turn_id: t.turn.id.clone(),
                    at: t.turn.started_at,
                    checkpoint: t.checkpoint.clone()?,
                })
            })
            .collect())
    }

    /// Puts the thread's workspace back as it was at `checkpoint` and
    /// continues the conversation from there in a new thread (the source's
    /// turns before the checkpoint's). Refused while a turn runs, and,
    /// unless `force`, when someone else changed files since the agent
    /// last left the workspace.
    pub async fn rewind(
        self,
        thread: &ThreadId,
        checkpoint: &str,
        force: bool,
    ) -> Result<Rewound, EngineError> {
        let view = self.read(thread).await?;
        let (turn_index, id) = find(&view, checkpoint)?;
        refuse_if_busy(&view)?;
        let store = self.store_of(&view)?;
        if !force {
            let others = blocking(store.clone(), |s| s.changed_by_others()).await?;
            if !others.is_empty() {
                return Ok(Rewound::Conflicts(strings(others)));
            }
        }
        let restored = blocking(store.clone(), move |s| s.restore(&id)).await?;
        let continued = self
            .fork_turns(
                thread,
                &view,
                &view.turns[..turn_index],
                ThreadId::new(),
                false,
                None,
            )
            .await?;
        // The continuation's store carries on from this one: its first
        // checkpoint hashes only what changed, and others' changes to the
        // rewound workspace are still told apart.
        if let Some(data_dir) = self.engine.shared.config.data_dir.clone() {
            let dir = crate::turn::checkpoint_store_dir(&data_dir, &continued.id);
            if let Err(error) = blocking(store, move |s| s.continue_into(&dir).map(|_| ())).await {
                tracing::warn!(%error, "the continuation starts a checkpoint store of its own");
            }
        }
        Ok(Rewound::Done {
            thread: Box::new(continued),
            restored: strings(restored),
        })
    }

    /// A new thread whose workspace is a new directory beside the source's
    /// holding the files of `checkpoint`, and whose conversation is the
    /// source's turns before the checkpoint's.
    pub async fn fork_at(self, thread: &ThreadId, checkpoint: &str) -> Result<Thread, EngineError> {
        let view = self.read(thread).await?;
        let (turn_index, id) = find(&view, checkpoint)?;
        let store = self.store_of(&view)?;
        let new_id = ThreadId::new();
        let fork = blocking(store, move |s| s.fork(&id)).await?;
        if let Some(branch) = &fork.branch {
            tracing::info!(dir = %fork.dir.display(), %branch, "forked into a worktree");
        }
        let dest = fork.dir;
        self.fork_turns(
            thread,
            &view,
            &view.turns[..turn_index],
            new_id,
            false,
            Some(dest.to_string_lossy().into_owned()),
        )
        .await
    }

    fn store_of(&self, view: &ThreadView) -> Result<Arc<CheckpointStore>, EngineError> {
        let data_dir =
            self.engine.shared.config.data_dir.as_ref().ok_or_else(|| {
                EngineError::Unsupported("checkpoints need a data dir".to_owned())
            })?;
        let dir = crate::turn::checkpoint_store_dir(data_dir, &view.thread.id);
        CheckpointStore::open(&dir, std::path::Path::new(&view.thread.cwd))
            .map(Arc::new)
            .map_err(|e| EngineError::Unavailable(e.to_string()))
    }
}

/// Finishes every rewind a crash cut short under `data_dir`, each logged.
pub(crate) fn finish_interrupted_rewinds(data_dir: &std::path::Path) {
    let Ok(stores) = std::fs::read_dir(data_dir.join("checkpoints")) else {
        return;
    };
    for store in stores.flatten() {
        match CheckpointStore::finish_interrupted(&store.path()) {
            Ok(Some(id)) => tracing::info!(checkpoint = %id, "finished a rewind cut short"),
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, store = %store.path().display(),
                "a rewind cut short could not be finished"),
        }
    }
}

/// The turn holding `checkpoint`, and its id.
fn find(view: &ThreadView, checkpoint: &str) -> Result<(usize, CheckpointId), EngineError> {
    let not_found = || EngineError::NotFound {
        what: "checkpoint",
        name: checkpoint.to_owned(),
    };
    let id = CheckpointId::parse(checkpoint).ok_or_else(not_found)?;
    let index = view
        .turns
        .iter()
        .position(|t| t.checkpoint.as_ref().is_some_and(|c| c.id == id.as_str()))
        .ok_or_else(not_found)?;
    Ok((index, id))
}

fn refuse_if_busy(view: &ThreadView) -> Result<(), EngineError> {
    match view
        .turns
        .iter()
        .find(|t| t.turn.status == TurnStatus::Running)
    {
        Some(running) => Err(EngineError::Busy {
            thread: view.thread.id.clone(),
            turn: running.turn.id.clone(),
        }),
        None => Ok(()),
    }
}

/// Runs `f` on the store on a blocking thread: git processes are waited on.
async fn blocking<T: Send + 'static>(
    store: Arc<CheckpointStore>,
    f: impl FnOnce(&CheckpointStore) -> Result<T, gantry_checkpoint::CheckpointError> + Send + 'static,
) -> Result<T, EngineError> {
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(|e| EngineError::Unavailable(e.to_string()))?
        .map_err(|e| EngineError::Unavailable(e.to_string()))
}

fn strings(paths: Vec<std::path::PathBuf>) -> Vec<String> {
    paths
        .into_iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

//! What every rpc shares: the engine and the server's own state.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use gantry_core::{Engine, EngineError};
use gantry_types::{ThreadId, ThreadView};
use tonic::Status;

use crate::status::status;
use gantry_llm::catalog::Catalog;
use tokio::sync::watch;

/// The engine plus what the protocol adds on top of it.
pub(crate) struct Ctx {
    /// The engine every session lives in.
    pub engine: Engine,
    /// Workspace of sessions that name none (`--workspace`, or `Initialize`).
    workspace: RwLock<PathBuf>,
    /// Set by `Initialize`; `HealthCheck` reports not-initialized before.
    initialized: AtomicBool,
    /// Tells the server to stop (the `Shutdown` rpc).
    shutdown: watch::Sender<bool>,
}

impl Ctx {
    pub(crate) fn new(engine: Engine, workspace: PathBuf, shutdown: watch::Sender<bool>) -> Self {
        Self {
            engine,
            workspace: RwLock::new(workspace),
            initialized: AtomicBool::new(false),
            shutdown,
        }
    }

    /// The default workspace of new sessions.
    pub(crate) fn workspace(&self) -> PathBuf {
        self.workspace
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the default workspace.
    pub(crate) fn set_workspace(&self, dir: PathBuf) {
        *self.workspace.write().unwrap_or_else(|p| p.into_inner()) = dir;
    }

    /// Whether `Initialize` has run.
    pub(crate) fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    /// Marks the server initialized.
    pub(crate) fn set_initialized(&self) {
        self.initialized.store(true, Ordering::Release);
    }

    /// A session that is not destroyed, as it is now: `NOT_FOUND` for an
    /// unknown one, `FAILED_PRECONDITION` for a destroyed one.
    pub(crate) async fn live_session(&self, id: &ThreadId) -> Result<Arc<ThreadView>, Status> {
        let view = self.engine.threads().read(id).await.map_err(status)?;
        if view.thread.archived {
            return Err(status(EngineError::Archived(id.clone())));
        }
        Ok(view)
    }

    /// The engine's model catalog (with the configuration's overrides), or
    /// the built-in one for an engine without a provider registry.
    pub(crate) fn catalog(&self) -> &Catalog {
        self.engine.providers().catalog()
    }

    /// Asks the server to shut down gracefully.
    pub(crate) fn request_shutdown(&self) {
        let _ = self.shutdown.send(true);
    }
}

//! What every rpc shares: the engine and the server's own state.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use gantry_core::Engine;
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
    /// Tells the server to stop (the `Shutdown` rpc, when it stops the process).
    shutdown: watch::Sender<bool>,
    /// Whether the `Shutdown` rpc stops the process (else only the agent).
    exit_on_shutdown: bool,
    /// Whether authenticated callers get providers' keys back.
    reveal_provider_keys: bool,
    /// Skills loaded inline or from a directory over this service, by name:
    /// A3S's skills are the server's, so listings without a session show them.
    skills: RwLock<BTreeMap<String, String>>,
}

impl Ctx {
    pub(crate) fn new(
        engine: Engine,
        workspace: PathBuf,
        shutdown: watch::Sender<bool>,
        exit_on_shutdown: bool,
        reveal_provider_keys: bool,
    ) -> Self {
        Self {
            engine,
            workspace: RwLock::new(workspace),
            initialized: AtomicBool::new(false),
            shutdown,
            exit_on_shutdown,
            reveal_provider_keys,
            skills: RwLock::new(BTreeMap::new()),
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

    /// Marks the server initialized (or, after `Shutdown`, not).
    pub(crate) fn set_initialized(&self, on: bool) {
        self.initialized.store(on, Ordering::Release);
    }

    /// Whether the `Shutdown` rpc stops the process.
    pub(crate) fn exit_on_shutdown(&self) -> bool {
        self.exit_on_shutdown
    }

    /// Whether `caller` may read providers' keys back.
    pub(crate) fn reveals_keys_to(&self, caller: crate::auth::Caller) -> bool {
        self.reveal_provider_keys && caller == crate::auth::Caller::Authenticated
    }

    /// The skills clients loaded over this service (name, `SKILL.md` text).
    pub(crate) fn loaded_skills(&self) -> BTreeMap<String, String> {
        self.skills
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Remembers a skill a client loaded.
    pub(crate) fn remember_skill(&self, name: &str, text: &str) {
        self.skills
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_owned(), text.to_owned());
    }

    /// Forgets a skill a client unloaded.
    pub(crate) fn forget_skill(&self, name: &str) {
        self.skills
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
    }

    /// A session that is not destroyed, as it is now: `NOT_FOUND` for an
    /// unknown or a destroyed one (A3S forgets a destroyed session; the
    /// thread stays in the engine for other protocols).
    pub(crate) async fn live_session(&self, id: &ThreadId) -> Result<Arc<ThreadView>, Status> {
        let view = self.engine.threads().read(id).await.map_err(status)?;
        if view.thread.archived {
            return Err(destroyed(id));
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

    /// Whether the server is stopping (a `Shutdown` that ends the process,
    /// or a signal): calls still in flight get the grace period.
    pub(crate) fn is_stopping(&self) -> bool {
        *self.shutdown.borrow()
    }
}

/// The status of a call on a destroyed session: gone, as in A3S.
pub(crate) fn destroyed(id: &ThreadId) -> Status {
    Status::not_found(format!("session {id} not found (it was destroyed)"))
}

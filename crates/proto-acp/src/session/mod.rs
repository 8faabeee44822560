//! The agent: what one connection knows (the client's capabilities, the
//! sessions it opened or loaded) and the methods over the engine.
//! `methods.rs` dispatches, `lifecycle.rs` is new/load/list, `modes.rs`
//! and `config.rs` the session's mode and options, `prompt.rs` a turn and
//! its updates, `permission.rs` an approval asked of the user,
//! `elicit.rs` the model's questions to the user as a form, `mcp.rs` the
//! client's MCP servers, `input.rs` a prompt's blocks as text.

mod config;
mod elicit;
mod input;
mod lifecycle;
mod mcp;
mod methods;
mod modes;
mod permission;
mod prompt;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use gantry_core::{Engine, EngineError};
use gantry_types::{SandboxMode, ThreadId};

use crate::rpc::{Peer, RpcError};
use crate::updates::Terminals;
use crate::wire::ClientCapabilities;

pub(crate) use methods::{call, notified};

/// How `gantry acp` runs its sessions.
#[derive(Debug, Clone)]
pub struct AcpOptions {
    /// The OS sandbox of commands (a `read-only` mode makes it read-only).
    pub sandbox: SandboxMode,
    /// Reasoning effort of new sessions.
    pub reasoning: Option<String>,
    /// The agent's version, as `initialize` reports it.
    pub version: String,
    /// Serves the tools through the client when it offers `fs` and
    /// `terminal` (the engine must have been built with it as its
    /// `tool_host_source`); `None`: the tools always do their own I/O.
    pub client_tools: Option<Arc<crate::ClientTools>>,
}

impl Default for AcpOptions {
    fn default() -> Self {
        Self {
            sandbox: SandboxMode::WorkspaceWrite,
            reasoning: None,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            client_tools: None,
        }
    }
}

/// One session this connection opened or loaded.
pub(crate) struct Session {
    pub id: ThreadId,
    pub cwd: String,
    /// Set while a prompt runs (one at a time).
    pub prompting: Mutex<bool>,
    /// The client's terminals, by the tool call they run for.
    pub terminals: Terminals,
    /// In the `read-only` mode (commands stay in Gantry's sandbox).
    read_only: AtomicBool,
}

impl Session {
    pub(crate) fn read_only(&self) -> bool {
        self.read_only.load(Ordering::Relaxed)
    }

    pub(crate) fn set_mode(&self, mode: modes::Mode) {
        self.read_only
            .store(mode == modes::Mode::ReadOnly, Ordering::Relaxed);
    }
}

/// The connection's state.
pub(crate) struct Agent {
    pub engine: Engine,
    pub options: AcpOptions,
    pub peer: Peer,
    pub caps: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

impl Agent {
    pub(crate) fn new(engine: Engine, options: AcpOptions, peer: Peer) -> Self {
        Self {
            engine,
            options,
            peer,
            caps: Mutex::default(),
            sessions: Mutex::default(),
        }
    }

    /// The client's capabilities.
    pub(crate) fn caps(&self) -> ClientCapabilities {
        *self.caps.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A session this connection opened, or `-32002`.
    pub(crate) fn session(&self, id: &str) -> Result<Arc<Session>, RpcError> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| RpcError::unknown_session(id))
    }

    /// The session of a thread, if this connection opened it.
    pub(crate) fn session_of(&self, thread: &ThreadId) -> Option<Arc<Session>> {
        self.session(&thread.0).ok()
    }

    /// Interrupts the running turns of every session (the client left).
    pub(crate) async fn interrupt_all(&self) {
        let ids: Vec<ThreadId> = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .map(|s| s.id.clone())
            .collect();
        for id in ids {
            let _ = self.engine.turns().interrupt(&id).await;
        }
    }

    fn open(&self, id: ThreadId, cwd: String, mode: modes::Mode) -> Arc<Session> {
        let session = Arc::new(Session {
            id: id.clone(),
            cwd,
            prompting: Mutex::new(false),
            terminals: Terminals::default(),
            read_only: AtomicBool::new(false),
        });
        session.set_mode(mode);
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.0, session.clone());
        session
    }
}

/// An engine error as an ACP error.
pub(crate) fn engine_error(e: EngineError) -> RpcError {
    match e {
        EngineError::ThreadNotFound(id) => RpcError::unknown_session(&id.0),
        EngineError::InvalidInput(m) => RpcError::invalid_params(m),
        e @ (EngineError::Busy { .. }
        | EngineError::Archived(_)
        | EngineError::NotFound { .. }
        | EngineError::AlreadyResolved { .. }
        | EngineError::AlreadyExists { .. }
        | EngineError::Unsupported(_)) => RpcError::invalid_params(e.to_string()),
        e => RpcError::internal(e.to_string()),
    }
}

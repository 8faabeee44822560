//! The client's capabilities serving the agent's tools (the engine's
//! `ToolHostSource` port): with `fs.readTextFile` and `fs.writeTextFile`,
//! the file tools read and write through `fs/read_text_file` and
//! `fs/write_text_file` (the editor's buffers, unsaved changes included,
//! and its undo history); with `terminal`, shell commands run in the
//! client's terminals (`terminal.rs`). Without them, or for a thread no
//! session of this connection has, the tools do their own I/O. A
//! `read-only` session's commands stay in Gantry's read-only sandbox.

mod files;
mod live_output;
mod terminal;

use std::sync::{Arc, Mutex, Weak};

use gantry_core::{ToolHost, ToolHostSource};
use gantry_types::ThreadId;

use crate::session::Agent;

/// Serves tool I/O through the connected client; give it to the engine
/// (`EngineBuilder::tool_host_source`) and to [`crate::serve_stdio`]
/// through [`crate::AcpOptions::client_tools`].
#[derive(Default)]
pub struct ClientTools {
    agent: Mutex<Weak<Agent>>,
}

impl std::fmt::Debug for ClientTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTools").finish_non_exhaustive()
    }
}

impl ClientTools {
    /// Not connected yet: the tools do their own I/O until a client is.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// The connection whose client serves the tools.
    pub(crate) fn attach(&self, agent: &Arc<Agent>) {
        *self.agent.lock().unwrap_or_else(|p| p.into_inner()) = Arc::downgrade(agent);
    }
}

impl ToolHostSource for ClientTools {
    fn host_for(&self, thread: &ThreadId) -> ToolHost {
        let agent = self
            .agent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .upgrade();
        let Some(agent) = agent else {
            return ToolHost::default();
        };
        let Some(session) = agent.session_of(thread) else {
            return ToolHost::default();
        };
        let caps = agent.caps();
        let mut host = ToolHost::default();
        if caps.fs.read_text_file && caps.fs.write_text_file {
            host.files = Some(Arc::new(files::ClientFiles::new(
                agent.peer.clone(),
                thread.0.clone(),
            )));
        }
        if caps.terminal && !session.read_only() {
            host.commands = Some(Arc::new(terminal::ClientTerminal::new(
                agent.peer.clone(),
                session,
            )));
        }
        host
    }
}

//! Language servers through the engine API, and the tools that offer them
//! to the model.
//!
//! Servers are keyed by (workspace root, language): the engine hosts
//! threads in many workspaces, and each gets its own server. A server is
//! started for an explicit root ([`Lsp::start_server`](crate::Lsp::start_server), the seed's
//! `root_uri`) or for a thread's workspace ([`Lsp::start_thread_server`](crate::Lsp::start_thread_server)).
//! Queries name a file, as the seed's requests do: the file's extension
//! picks the language and the server whose root holds the file answers
//! (an absolute path; a relative one is looked up under each root of that
//! language). While a server runs for a thread's workspace, the thread's
//! turns offer the model `lsp_hover`, `lsp_definition`, `lsp_references`,
//! `lsp_symbols` and `lsp_diagnostics`.
//!
//! Started, stopped and crashed servers are published as
//! [`EngineEventKind::Lsp`] events.

use std::path::Path;
use std::sync::Arc;

use gantry_tools::lsp::{DEFAULT_SYMBOL_LIMIT, LspError};
use gantry_types::ThreadId;
use gantry_types::lsp::{
    LspDiagnostic, LspHover, LspLocation, LspPosition, LspServerInfo, LspSymbol,
};
use tokio_util::sync::CancellationToken;

use crate::engine_events::EngineEventKind;
use crate::{Engine, EngineError};

/// Language servers: start and stop them, ask them about code.
/// Get one from [`Engine::lsp`].
#[derive(Clone, Copy)]
pub struct Lsp<'e> {
    pub(crate) engine: &'e Engine,
}

impl Lsp<'_> {
    /// Starts the `language` server (`python`, `rust`, `typescript`, `cpp`,
    /// `go`, or a configured one) for the workspace `root` and waits until
    /// it is initialized. Already running: returned as is. Crashed: started
    /// again. Not installed: an error naming the command tried.
    pub async fn start_server(
        &self,
        language: &str,
        root: &Path,
    ) -> Result<LspServerInfo, EngineError> {
        self.engine
            .shared
            .lsp
            .start(language, root)
            .await
            .map_err(lsp_error)
    }

    /// Starts the `language` server for the thread's workspace.
    pub async fn start_thread_server(
        &self,
        thread: &ThreadId,
        language: &str,
    ) -> Result<LspServerInfo, EngineError> {
        let cwd = self.engine.threads().read(thread).await?.thread.cwd.clone();
        self.engine
            .lsp()
            .start_server(language, Path::new(&cwd))
            .await
    }

    /// Stops and starts again the `language` server of `root` (also one
    /// that crashed).
    pub async fn restart_server(
        &self,
        language: &str,
        root: &Path,
    ) -> Result<LspServerInfo, EngineError> {
        self.engine
            .shared
            .lsp
            .restart(language, root)
            .await
            .map_err(lsp_error)
    }

    /// Stops the `language` server of `root`, or of every root when `None`
    /// (the seed's `StopLspServer` names only the language). False if none
    /// was known.
    pub async fn stop_server(
        &self,
        language: &str,
        root: Option<&Path>,
    ) -> Result<bool, EngineError> {
        let stopped = self
            .engine
            .shared
            .lsp
            .stop(language, root)
            .await
            .map_err(lsp_error)?;
        Ok(stopped > 0)
    }

    /// Every server started and not stopped: running, or crashed
    /// (`running: false`, `error` says why).
    pub fn servers(self) -> Vec<LspServerInfo> {
        self.engine.shared.lsp.list()
    }

    /// What the server shows at `line`/`column` (0-indexed) of `file`.
    pub async fn hover(
        &self,
        file: &Path,
        line: u32,
        column: u32,
    ) -> Result<LspHover, EngineError> {
        self.engine
            .shared
            .lsp
            .hover(file, at(line, column), &CancellationToken::new())
            .await
            .map_err(lsp_error)
    }

    /// Where the symbol at `line`/`column` (0-indexed) of `file` is defined.
    pub async fn definition(
        &self,
        file: &Path,
        line: u32,
        column: u32,
    ) -> Result<Vec<LspLocation>, EngineError> {
        self.engine
            .shared
            .lsp
            .definition(file, at(line, column), &CancellationToken::new())
            .await
            .map_err(lsp_error)
    }

    /// References to the symbol at `line`/`column` (0-indexed) of `file`,
    /// with or without its declaration.
    pub async fn references(
        &self,
        file: &Path,
        line: u32,
        column: u32,
        include_declaration: bool,
    ) -> Result<Vec<LspLocation>, EngineError> {
        self.engine
            .shared
            .lsp
            .references(
                file,
                at(line, column),
                include_declaration,
                &CancellationToken::new(),
            )
            .await
            .map_err(lsp_error)
    }

    /// Workspace symbols matching `query` from every running server, at
    /// most `limit` (0 means the seed's default, 20). A server that does
    /// not support symbol search says so when no other server answers.
    pub async fn symbols(&self, query: &str, limit: u32) -> Result<Vec<LspSymbol>, EngineError> {
        let limit = match limit {
            0 => DEFAULT_SYMBOL_LIMIT,
            n => n as usize,
        };
        self.engine
            .shared
            .lsp
            .symbols(query, limit, None, &CancellationToken::new())
            .await
            .map_err(lsp_error)
    }

    /// Diagnostics of `file` (read from disk now, the server's answer
    /// awaited), or when `None` every diagnostic the running servers have
    /// published (for the files they were asked about or opened).
    pub async fn diagnostics(
        &self,
        file: Option<&Path>,
    ) -> Result<Vec<LspDiagnostic>, EngineError> {
        self.engine
            .shared
            .lsp
            .diagnostics(file, None, &CancellationToken::new())
            .await
            .map_err(lsp_error)
    }
}

impl Engine {
    /// Publishes the language servers' events on the engine-wide stream.
    /// The sink holds the engine weakly, so the servers (owned by the
    /// engine) do not keep it alive.
    pub(crate) fn forward_lsp_events(&self) {
        let weak = Arc::downgrade(&self.shared);
        self.shared.lsp.set_event_sink(Arc::new(move |event| {
            if let Some(shared) = weak.upgrade() {
                Engine { shared }.publish(None, EngineEventKind::Lsp(event));
            }
        }));
    }
}

fn at(line: u32, character: u32) -> LspPosition {
    LspPosition { line, character }
}

/// Maps a language-server error onto the engine's: no server for the
/// file is "not found", what the caller can fix is invalid input, and a
/// server that failed is unavailable.
fn lsp_error(e: LspError) -> EngineError {
    match e {
        LspError::NoServer { language, path } => EngineError::NotFound {
            what: "running language server",
            name: format!("{language} for {path}"),
        },
        LspError::NoServers { path } => EngineError::NotFound {
            what: "running language server",
            name: path,
        },
        e @ (LspError::UnknownLanguage { .. }
        | LspError::NoLanguageFor { .. }
        | LspError::InvalidRoot { .. }
        | LspError::InvalidPath(_)) => EngineError::InvalidInput(e.to_string()),
        e @ (LspError::NotInstalled { .. } | LspError::Unsupported { .. }) => {
            EngineError::Unsupported(e.to_string())
        }
        e @ (LspError::Spawn { .. }
        | LspError::Crashed { .. }
        | LspError::Timeout { .. }
        | LspError::Server { .. }
        | LspError::Cancelled) => EngineError::Unavailable(e.to_string()),
    }
}

//! Language server client: starts a language server per (workspace root,
//! language), keeps the files it is asked about in sync from disk, and
//! asks it for hovers, definitions, references, workspace symbols and
//! diagnostics; [`LspManager::tools`] offers those to the model.
//!
//! The JSON-RPC framing over the child's stdio is hand-written
//! (`transport.rs`, `connection.rs`) with `lsp-types` for the message shapes:
//! a client needs only framing, request ids and a pending map, which is
//! smaller than adapting `async-lsp`'s tower main loop to a child process.
//!
//! Positions are 0-indexed (line, UTF-16 character), as LSP and seed 001
//! say. A server that is not installed is refused before anything is
//! spawned, with an error naming the command tried; a server whose process
//! exits on its own is reported crashed ([`gantry_types::lsp::LspEvent`])
//! and can be started again.

mod config;
mod connection;
mod convert;
mod diagnostics;
mod manager;
mod server;
mod tools;
mod transport;

use std::path::PathBuf;
use std::time::Duration;

pub use config::{LspCommand, LspServerConfig, LspTimeouts, default_servers, find_program};
pub use manager::{DEFAULT_SYMBOL_LIMIT, LspEventSink, LspManager, LspSandbox};
pub use tools::{LspOp, LspTool};

/// Why a language-server operation failed. Messages name the language, the
/// server or the command, and say what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LspError {
    /// No server is configured for the language.
    #[error("no language server is configured for `{language}`; known languages: {known}")]
    UnknownLanguage {
        /// The language asked for.
        language: String,
        /// The configured languages, comma-separated.
        known: String,
    },
    /// No configured server serves files like this one.
    #[error("no language server is configured for {path} (known languages: {known})")]
    NoLanguageFor {
        /// The file.
        path: String,
        /// The configured languages, comma-separated.
        known: String,
    },
    /// None of the language's commands is installed.
    #[error("the {language} language server is not installed: {tried}")]
    NotInstalled {
        /// The language.
        language: String,
        /// What was tried and how to install it.
        tried: String,
    },
    /// The root is not an existing directory.
    #[error("workspace root {root} is not an existing directory")]
    InvalidRoot {
        /// The root as given.
        root: String,
    },
    /// The file cannot be used (missing, unreadable, outside every root).
    #[error("{0}")]
    InvalidPath(String),
    /// No server of the language runs for the file's workspace.
    #[error(
        "no {language} language server is running for {path}; start one for its workspace first"
    )]
    NoServer {
        /// The language.
        language: String,
        /// The file or workspace.
        path: String,
    },
    /// No server runs at all (for the workspace).
    #[error("no language server is running for {path}; start one first")]
    NoServers {
        /// The workspace, or "any workspace".
        path: String,
    },
    /// The server could not be started.
    #[error("cannot start the {language} language server `{command}`: {error}")]
    Spawn {
        /// The language.
        language: String,
        /// The command line.
        command: String,
        /// Why.
        error: String,
    },
    /// The server's process is gone (it crashed or was killed).
    #[error(
        "the {language} language server for {root} is not running: {error}; start it again to restart it"
    )]
    Crashed {
        /// The language.
        language: String,
        /// Its root.
        root: String,
        /// Why it stopped.
        error: String,
    },
    /// The server does not offer the feature.
    #[error("the {language} language server ({name}) does not support {feature}")]
    Unsupported {
        /// The language.
        language: String,
        /// The server's name.
        name: String,
        /// The feature (`workspace symbols`).
        feature: &'static str,
    },
    /// The server did not answer in time.
    #[error("the {language} language server did not answer {method} within {}s", timeout.as_secs())]
    Timeout {
        /// The language.
        language: String,
        /// The request.
        method: String,
        /// The limit.
        timeout: Duration,
    },
    /// The server answered with an error, or with something unreadable.
    #[error("the {language} language server failed {method}: {message}")]
    Server {
        /// The language.
        language: String,
        /// The request.
        method: String,
        /// The server's message.
        message: String,
    },
    /// The caller cancelled the request.
    #[error("the language server request was cancelled")]
    Cancelled,
}

impl LspError {
    /// A path error for `path` with `why`.
    pub(crate) fn path(path: &std::path::Path, why: impl std::fmt::Display) -> Self {
        LspError::InvalidPath(format!("{}: {why}", path.display()))
    }
}

/// The key of one server: its canonical workspace root and its language.
pub(crate) type ServerKey = (PathBuf, String);

//! What can go wrong keeping or restoring a checkpoint.

use std::path::PathBuf;

/// Why a checkpoint could not be recorded, read or restored.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// `git` could not be started (not installed, not on `PATH`).
    #[error("cannot run git: {0}")]
    GitMissing(#[source] std::io::Error),
    /// A `git` command failed; its arguments and what it said.
    #[error("git {args} failed: {stderr}")]
    Git {
        /// The subcommand and its arguments.
        args: String,
        /// Git's own words.
        stderr: String,
    },
    /// The store's directory or a file of it could not be read or written.
    #[error("checkpoint store {path}: {source}")]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The id names no checkpoint of this store.
    #[error("no checkpoint {0}")]
    Unknown(String),
}

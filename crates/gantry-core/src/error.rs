//! Errors of engine commands, each with a message a user can act on.

use gantry_store::StoreError;
use gantry_types::{ThreadId, TurnFailure, TurnId};

/// Why an engine command was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No thread with that id.
    #[error("thread {0} not found")]
    ThreadNotFound(ThreadId),
    /// No turn with that id in the thread.
    #[error("turn {turn} not found in thread {thread}")]
    TurnNotFound {
        /// The thread.
        thread: ThreadId,
        /// The missing turn.
        turn: TurnId,
    },
    /// A turn is running and the caller did not allow steering or queueing.
    #[error(
        "thread {thread} is busy with turn {turn}; steer the running turn, queue the message, or interrupt the turn first"
    )]
    Busy {
        /// The thread.
        thread: ThreadId,
        /// The running turn.
        turn: TurnId,
    },
    /// Steering is not possible right now.
    #[error("cannot steer thread {thread}: {reason}")]
    NotSteerable {
        /// The thread.
        thread: ThreadId,
        /// Why not.
        reason: &'static str,
    },
    /// The thread is archived and accepts no input.
    #[error("thread {0} is archived; unarchive it first")]
    Archived(ThreadId),
    /// No such named thing (a provider, ...).
    #[error("{what} `{name}` not found")]
    NotFound {
        /// What was looked for (`provider`).
        what: &'static str,
        /// The name asked for.
        name: String,
    },
    /// Something with that id or name exists already (a thread a client
    /// named).
    #[error("{what} `{name}` already exists")]
    AlreadyExists {
        /// What was to be created (`thread`).
        what: &'static str,
        /// The id or name taken.
        name: String,
    },
    /// What a client answered is no longer waiting for an answer (a
    /// user-input request answered, timed out, or ended with its turn):
    /// the first answer won.
    #[error("{what} {id} is no longer pending: it {how}")]
    AlreadyResolved {
        /// What was answered (`user input request`).
        what: &'static str,
        /// Its id.
        id: String,
        /// How it ended (`was answered`, `timed out`, ...).
        how: &'static str,
    },
    /// The command's input is invalid.
    #[error("{0}")]
    InvalidInput(String),
    /// A structured-output turn ended without valid output (the retry or
    /// round limit, an interrupt, a model error, the goal's token budget).
    #[error("structured output failed in turn {turn}: {reason}")]
    Structured {
        /// The turn that ran.
        turn: TurnId,
        /// Why it has no output.
        reason: String,
        /// The turn's failure, when it failed.
        failure: Option<TurnFailure>,
    },
    /// What the command needs is not on this machine, or cannot do it: a
    /// language server that is not installed or lacks the feature asked for.
    /// Not the request's fault, and retrying will not help until the
    /// machine changes.
    #[error("{0}")]
    Unsupported(String),
    /// Something outside the engine that the command needs (a language
    /// server) is not running, failed, or did not answer in time.
    #[error("{0}")]
    Unavailable(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The event log cannot be saved right now (a full disk, a broken
    /// database); the events are kept in memory and saving is retried.
    #[error(transparent)]
    StoreUnavailable(#[from] crate::writer::StoreUnavailable),
    /// The engine is shutting down.
    #[error("the engine is shutting down")]
    ShuttingDown,
}

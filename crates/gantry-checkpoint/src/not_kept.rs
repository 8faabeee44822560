//! The files a checkpoint does not keep, and why: each is reported, never
//! silently dropped.

use std::path::PathBuf;

/// One path of the workspace a checkpoint does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotKept {
    /// Relative to the workspace.
    pub path: PathBuf,
    /// Why it is not kept.
    pub reason: NotKeptReason,
}

/// Why a path is not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotKeptReason {
    /// A regular file larger than the store's size limit (its size).
    TooLarge(u64),
    /// A FIFO, socket or device: no content to keep.
    Special,
    /// A directory holding a git repository of its own: its history is not
    /// the thread's to keep.
    NestedRepository,
}

impl std::fmt::Display for NotKeptReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotKeptReason::TooLarge(size) => write!(f, "too large ({size} bytes)"),
            NotKeptReason::Special => f.write_str("special file"),
            NotKeptReason::NestedRepository => f.write_str("nested repository"),
        }
    }
}

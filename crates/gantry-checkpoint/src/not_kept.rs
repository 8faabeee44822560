//! The files a checkpoint does not keep, and why: each is reported, never
//! silently dropped.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

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

/// Which of `candidates` (untracked paths, as `git ls-files -o` names
/// them, or paths an add changed) the store cannot keep under `limit` bytes.
pub(crate) fn among(workspace: &Path, candidates: &[PathBuf], limit: u64) -> Vec<NotKept> {
    let mut found = Vec::new();
    for path in candidates {
        // `ls-files -o` names a nested repository as `dir/`.
        if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
            let trimmed = path.to_string_lossy().trim_end_matches('/').to_owned();
            found.push(NotKept {
                path: PathBuf::from(trimmed),
                reason: NotKeptReason::NestedRepository,
            });
            continue;
        }
        // A path gone since (deleted) is the deletion git records.
        let Ok(meta) = std::fs::symlink_metadata(workspace.join(path)) else {
            continue;
        };
        if meta.file_type().is_file() && meta.len() > limit {
            found.push(NotKept {
                path: path.clone(),
                reason: NotKeptReason::TooLarge(meta.len()),
            });
        }
    }
    found
}

/// The special files of `workspace` outside ignored paths. Git skips them
/// without a word; the directory listing's file types say which they are,
/// so no file is opened or stat'ed for this.
pub(crate) fn special_files(workspace: &Path) -> Vec<NotKept> {
    let walk = ignore::WalkBuilder::new(workspace)
        .hidden(false)
        .ignore(false)
        .parents(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    let mut found = Vec::new();
    for entry in walk.flatten() {
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let special =
            kind.is_fifo() || kind.is_socket() || kind.is_block_device() || kind.is_char_device();
        if special && let Ok(path) = entry.path().strip_prefix(workspace) {
            found.push(NotKept {
                path: path.to_owned(),
                reason: NotKeptReason::Special,
            });
        }
    }
    found
}

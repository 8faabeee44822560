//! Checkpoints of a workspace: its files as they were at a turn, kept in a
//! content-addressed store outside it, and put back on request.
//!
//! The store is a private bare git repository (`git` the CLI, never the
//! user's own `.git`, index or stash): `record` adds the workspace with a
//! private index (`git add -A` semantics, honouring `.gitignore`, the
//! user's `core.excludesFile` and `.git/info/exclude`) and commits the tree;
//! `restore` puts a checkpoint's files back (created files removed, deleted
//! ones restored, the executable bit and symlinks kept, ignored files
//! untouched); `export` writes a checkpoint's files into a new directory.
//! Files over the size limit, special files and nested repositories are
//! not kept, and every checkpoint says which.

mod error;
mod fork;
mod git;
mod journal;
mod not_kept;
mod objects;
mod scan;
mod store;

pub use error::CheckpointError;
pub use fork::Fork;
pub use not_kept::{NotKept, NotKeptReason};
pub use store::{Checkpoint, CheckpointId, CheckpointStore, DEFAULT_SIZE_LIMIT};

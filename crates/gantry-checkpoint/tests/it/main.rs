//! Checkpoints against real workspaces in temp dirs, with the real `git`.

mod support;

mod export;
mod record;
mod restore;

//! The policy's integration tests: one binary, one module per subject.

mod decide;
mod rules;
mod safe_commands;
mod shell;
mod support;
mod wrappers;

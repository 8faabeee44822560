//! gantry-tools's integration tests, in one binary (one link, not one per file).

mod child_env;
mod common;
mod files;
mod host;
mod mcp;
mod sandbox;
mod sandbox_namespaces;
mod sandbox_protected;
mod search;
mod shell;
mod shell_snapshot;
mod skills;
mod symlink_race;

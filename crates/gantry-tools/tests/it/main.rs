//! gantry-tools's integration tests, in one binary (one link, not one per file).

mod common;
mod child_env;
mod files;
mod mcp;
mod sandbox;
mod sandbox_protected;
mod search;
mod shell;
mod skills;
mod symlink_race;

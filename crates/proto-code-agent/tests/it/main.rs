//! proto-code-agent's integration tests, in one binary (one link, not one per file).

mod common;
mod context;
mod cron;
mod events;
mod generation;
mod hitl;
mod lanes;
mod lifecycle;
mod lsp;
mod mcp;
mod memory;
mod permissions;
mod planning;
mod providers;
mod sessions;
mod skills;
mod todos;
mod wire;

//! gantry-core's integration tests, in one binary (one link, not one per file).

mod agents;
mod cells;
mod command_env;
mod common;
mod context;
mod cron;
mod durability;
mod event_bus;
mod images;
mod keys;
mod lsp;
mod mcp;
mod memory;
mod projection;
mod providers;
mod reasoning;
mod response_usage;
mod safety;
mod settings;
mod skills;
mod steer_queue_interrupt;
mod structured;
mod threads;
mod todos;
mod turn_loop;

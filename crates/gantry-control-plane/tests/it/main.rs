//! gantry-control-plane's integration tests, in one binary (one link, not one per file).

mod agents;
mod all_events;
mod api;
mod dashboard;
mod e2e;
mod e2e_v0_7;
mod fuzz;
mod github;
mod github_app;
mod grpc_wire;
mod operations;
mod recovery;
mod replicas;
mod runners;
mod security;
mod store;
mod support;
mod threads;
mod turn_ends;
mod unhealthy;
mod unknown_kinds;

//! gantry-cli's integration tests, in one binary (one link, not one per file).

mod a3s_conformance;
mod acknowledged;
mod acp_conformance;
mod codewhale_conformance;
mod codewhale_serve;
mod common;
mod config;
mod control_plane_postgres;
mod control_plane_replicas;
mod crash;
mod disk_full;
mod exec;
mod http_serve;
mod keys;
mod lifecycle;
mod listeners;
mod pando_conformance;
mod postgres_store;
mod pytest;
mod quickstart;
mod rome_conformance;
mod runner_conformance;
mod runner_control_plane;
mod serve;
mod store_password;
mod tls;

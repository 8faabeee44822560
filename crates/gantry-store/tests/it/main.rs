//! gantry-store's integration tests, in one binary (one link, not one per file).

#[macro_use]
mod conformance;
mod memory;
mod memory_ranking;
mod opening;
mod postgres;
mod schema_image;
mod sqlite;

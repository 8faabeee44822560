//! ATIF, the Agent Trajectory Interchange Format that Harbor (the
//! Terminal-Bench harness) records runs in: its wire types (`wire.rs`) and
//! the one mapping from a thread's events to a trajectory (`mapping.rs`),
//! shared by `gantry threads export --format atif`, `gantry exec
//! --trajectory` and `GET /v1/threads/{id}/trajectory`. No I/O.

mod mapping;
mod wire;

pub use mapping::{AgentInfo, NoSteps, trajectory};
pub use wire::{
    Agent, FinalMetrics, Metrics, Observation, ObservationResult, SCHEMA_VERSION, Source, Step,
    ToolCall, Trajectory,
};

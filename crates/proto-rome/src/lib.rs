//! Rome OS's agent runner over the Gantry engine (seed 004,
//! `@rome-os/app-runtime`'s `AgentRunnerInterface`): NDJSON over HTTP for
//! the `@gantry/rome-runner` package (`clients/rome/`). A Rome session is a
//! thread, keyed by agent and channel thread key; each run streams Rome's
//! `AgentMessage`s, bracketed by `turn_start` and `turn_end`.

mod agents;
mod http;
mod mapper;
mod service;
mod sessions;
mod stream;
pub mod wire;

pub use agents::{AgentProfile, Profiles};
pub use http::{router, serve_http};
pub use service::{Refused, Rome};

//! `companyhelm.runner.v1.AgentRunnerControlService`: Gantry as a runner
//! that dials a control plane and serves its requests with the engine, and
//! Gantry's own control plane that runners dial.

/// The generated messages, client and server of the runner proto.
pub mod pb {
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    tonic::include_proto!("companyhelm.runner.v1");
}

pub mod control_plane;
pub mod github;
pub mod runner;
pub mod validate;

//! `companyhelm.runner.v1.AgentRunnerControlService`: Gantry as a runner
//! that dials a control plane and serves its requests with the engine, and
//! Gantry's own control plane that runners dial.

/// The generated messages, client and server of the runner proto.
pub mod pb {
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    tonic::include_proto!("companyhelm.runner.v1");

    /// The methods whose request is one message (unary and
    /// server-streaming), as `/package.Service/Method` paths.
    pub const SINGLE_MESSAGE_METHODS: &[&str] =
        include!(concat!(env!("OUT_DIR"), "/single_message_methods.rs"));
}

pub mod control_plane;
pub mod github;
pub mod runner;
pub mod validate;

//! `companyhelm.runner.v1`, the protocol between a runner and its control
//! plane: the messages, client and server generated from the proto, the
//! proto's `buf.validate` rules checked by hand, and the GitHub token types
//! both sides pass over it. Gantry's runner (`proto-runner-control`) and
//! Gantry's control plane (`gantry-control-plane`) both use it, and neither
//! pulls in the other through it.

/// The generated messages, client and server of the runner proto.
pub mod pb {
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    tonic::include_proto!("companyhelm.runner.v1");

    /// The methods whose request is one message (unary and
    /// server-streaming), as `/package.Service/Method` paths.
    pub const SINGLE_MESSAGE_METHODS: &[&str] =
        include!(concat!(env!("OUT_DIR"), "/single_message_methods.rs"));
}

pub mod github;
pub mod validate;

//! The `a3s.code.agent.v1.CodeAgentService` gRPC API over the Gantry engine.

/// The generated messages, server and client of the seed's proto.
pub mod pb {
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    tonic::include_proto!("a3s.code.agent.v1");

    /// The methods whose request is one message (unary and
    /// server-streaming), as `/package.Service/Method` paths.
    pub const SINGLE_MESSAGE_METHODS: &[&str] =
        include!(concat!(env!("OUT_DIR"), "/single_message_methods.rs"));

    /// The encoded file descriptor set, for server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("code_agent_descriptor");
}

mod auth;
mod listener;
mod names;
mod service;
mod state;
mod status;
mod trace_context;
mod views;

pub use service::CodeAgent;
mod server;

pub use listener::Listener;
pub use server::{DEFAULT_ADDR, ServeError, ServeOptions, TlsPem, serve};

//! `companyhelm.runner.v1`, the protocol between a runner and its control
//! plane, in the two versions Gantry speaks: 0.2.0 (the seed's contract,
//! [`v0_2`]) and 0.7.0 (what CompanyHelm ships today, [`v0_7`]; 0.5.26 is
//! the same on the wire), each generated from its own proto as its own
//! module. Both sides' logic works with [`messages`], the messages of
//! either version, and [`ProtocolVersion`] maps them onto one version's
//! wire (`map/`), checking the proto's `buf.validate` rules by hand
//! (`validate/`). Also the GitHub token types the 0.2.0 rpcs pass.
//!
//! Gantry's runner (`proto-runner-control`) and Gantry's control plane
//! (`gantry-control-plane`) both use it, and neither pulls in the other
//! through it.

/// The 0.2.0 contract: messages, client and server.
pub mod v0_2 {
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    include!(concat!(env!("OUT_DIR"), "/v0_2/companyhelm.runner.v1.rs"));
}

/// The 0.7.0 contract: messages, client and server.
pub mod v0_7 {
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    include!(concat!(env!("OUT_DIR"), "/v0_7/companyhelm.runner.v1.rs"));
}

/// The methods whose request is one message (unary and server-streaming),
/// as `/package.Service/Method` paths, in either version (0.2.0 has every
/// method of 0.7.0, and the GitHub rpcs besides).
pub const SINGLE_MESSAGE_METHODS: &[&str] =
    include!(concat!(env!("OUT_DIR"), "/single_message_methods.rs"));

/// The path of the control channel, the same in both versions.
pub const CONTROL_CHANNEL_PATH: &str =
    "/companyhelm.runner.v1.AgentRunnerControlService/ControlChannel";

/// The path of the registration, the same in both versions.
pub const REGISTER_RUNNER_PATH: &str =
    "/companyhelm.runner.v1.AgentRunnerControlService/RegisterRunner";

pub mod github;
pub mod kinds;
pub mod map;
pub mod messages;
pub mod validate;
mod version;

pub use kinds::UnknownKind;
pub use map::{Inbound, NotInVersion};
pub use version::ProtocolVersion;
pub use version::UnknownVersion;

//! JSON-RPC 2.0 over newline-delimited JSON, both ways: `envelope.rs`
//! reads a line and writes answers and errors; `peer.rs` is the agent's
//! side of the connection (its own requests to the client, numbered from
//! 0, and their answers; notifications).

mod envelope;
mod peer;

pub(crate) use envelope::{Incoming, RpcError, read};
pub(crate) use peer::Peer;

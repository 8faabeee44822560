//! proto-rome's integration tests: the HTTP routes over a real engine and
//! the scripted model, on an ephemeral port.

mod common;
mod routes;

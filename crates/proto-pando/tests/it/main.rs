//! proto-pando's integration tests, in one binary: a real engine (in-memory
//! store, the scripted model over real HTTP) served as a Pando instance,
//! spoken to over real ZeroMQ sockets (DEALER and SUB).

mod common;
mod instance;
mod newer;
mod planted;

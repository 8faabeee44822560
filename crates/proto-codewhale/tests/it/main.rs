//! proto-codewhale's integration tests, in one binary.

mod common;
mod golden;
mod http;
mod session;
mod stdio;

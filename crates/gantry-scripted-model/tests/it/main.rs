//! The scripted model from outside: `script.rs` loads scripts (the
//! documented examples, the named mistakes), `server.rs` checks the bytes the
//! server puts on the wire over raw HTTP/1.1.

mod script;
mod server;

//! The Agent Client Protocol (ACP, protocol version 1) over the Gantry
//! engine: an editor (Zed, JetBrains, Neovim) spawns `gantry acp` and
//! speaks newline-delimited JSON-RPC 2.0 on its stdin/stdout; each ACP
//! session is a Gantry thread, so it can be followed from any other
//! protocol on the same store.
//!
//! `wire` holds the protocol's JSON as Gantry's own types; `rpc` the
//! JSON-RPC envelopes and the agent's requests to the client; `session`
//! the methods over the engine's public API; `updates` maps a thread's
//! notifications (and, for `session/load`, its stored history) onto
//! `session/update`s; `delegate` serves the agent's file and command tools
//! through the client when it offers `fs` and `terminal`. Only the
//! engine's public API and its projection are used.

mod delegate;
mod rpc;
mod session;
mod stdio;
mod updates;
pub mod wire;

pub use delegate::ClientTools;
pub use session::AcpOptions;
pub use stdio::serve_stdio;

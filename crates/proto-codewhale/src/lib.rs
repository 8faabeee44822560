//! The CodeWhale app-server protocol (seed 002, `codewhale_protocol`
//! 0.8.59) over the Gantry engine: JSON over HTTP (`http`) and
//! newline-delimited JSON-RPC 2.0 over stdio (`stdio`), both answering
//! from one transport-free layer (`service`) with real turns behind them.
//!
//! `wire` holds the protocol's JSON as Gantry's own types; `frames` maps
//! a thread's engine notifications onto CodeWhale's event frames. Only the
//! engine's public API and its projection are used.

pub mod frames;
pub mod http;
mod service;
pub mod stdio;
pub mod wire;

pub use http::{DEFAULT_HTTP_ADDR, router, serve_http};
pub use service::{CodeWhale, SETTINGS_NAMESPACE, ServiceError};
pub use stdio::serve_stdio;

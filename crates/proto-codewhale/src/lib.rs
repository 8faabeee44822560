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

/// Which CodeWhale a listener speaks: the seed's 0.8.59, or today's 0.10
/// (0.10.2). A thread is the same thread whichever version reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Version {
    /// 0.8.59, the seed's.
    #[default]
    V0_8,
    /// 0.10.2.
    V0_10,
}

impl std::str::FromStr for Version {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "0.8" | "0.8.59" => Ok(Version::V0_8),
            "0.10" | "0.10.2" => Ok(Version::V0_10),
            other => Err(format!(
                "CodeWhale version `{other}`: expected 0.8.59 (the seed's) or 0.10.2"
            )),
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Version::V0_8 => "0.8.59",
            Version::V0_10 => "0.10.2",
        })
    }
}
pub use service::v0_10::{FrameSink, Refusal, TurnAnswer, V0_10};
pub use service::{CodeWhale, SETTINGS_NAMESPACE, ServiceError};
pub use stdio::serve_stdio;

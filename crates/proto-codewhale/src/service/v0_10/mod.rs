//! CodeWhale 0.10 over the engine. 0.10's app-server library forwards
//! every thread, turn and config request to a host process that holds the
//! engine, and without one answers `runtime_unavailable`; Gantry is that
//! engine, so it does the work and answers with the shapes the library's
//! source gives (its `thread_control.rs`: a thread projected from the
//! engine's record, a creation's receipt, `thread_not_found` for an
//! unknown thread). What the library answers before it needs an engine
//! (an `operation_key` missing, a goal set, a turn with tools on these
//! transports) Gantry answers as it does, word for word; where Gantry
//! does more (an interactive turn, an answer to a question), the book's
//! CodeWhale page says so.
//!
//! `threads.rs` answers thread requests, `turns.rs` messages and prompts,
//! `app.rs` app requests, `views.rs` renders the engine's state as 0.10
//! shows it; errors are [`Refusal`]s, which each transport renders its way.

mod app;
mod threads;
mod turns;
mod views;

use gantry_core::EngineError;
use serde_json::{Value, json};

use super::CodeWhale;

pub use turns::{FrameSink, TurnAnswer};

/// JSON-RPC code: the engine could not do it (the library's
/// `runtime_unavailable`, -32005).
pub(crate) const RUNTIME_UNAVAILABLE: i64 = -32005;
/// JSON-RPC code: no such thread (-32004).
pub(crate) const THREAD_NOT_FOUND: i64 = -32004;

/// Why a 0.10 request was not done: a JSON-RPC error, as both transports
/// carry it (HTTP as `{error: {code, jsonrpc_code, message, data}}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The JSON-RPC code.
    pub code: i64,
    /// What happened.
    pub message: String,
    /// More, as the library gives it (`null` when it gives none).
    pub data: Value,
}

impl Refusal {
    /// The engine refused or failed (-32005), with the library's `data`.
    pub fn runtime_unavailable(message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            code: RUNTIME_UNAVAILABLE,
            data: json!({ "error": "runtime_unavailable", "detail": message }),
            message,
        }
    }

    /// No thread `id` (-32004).
    pub fn thread_not_found(id: &str) -> Self {
        Self {
            code: THREAD_NOT_FOUND,
            message: format!("thread not found: {id}"),
            data: json!({ "error": "thread_not_found", "thread_id": id }),
        }
    }

    /// A request that does not fit (-32602).
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self {
            code: -32602,
            message: message.into(),
            data: Value::Null,
        }
    }

    /// What the library's transports refuse: a goal set, a turn that could
    /// ask for an approval or a clarification (-32602).
    pub fn interactive_unsupported() -> Self {
        Self {
            code: -32602,
            message: "Compatibility transports cannot answer approvals or clarification \
                      requests. Use codewhale app-server --http and /v1/* for interactive turns \
                      and goal execution; tool-free turn requests require explicit \
                      allowed_tools: []."
                .to_owned(),
            data: json!({
                "error": "interactive_execution_unsupported",
                "entrypoint": "codewhale app-server --http",
                "allowed_tools_required": [],
                "goal_execution": false,
            }),
        }
    }

    /// A turn that did not complete, or what else failed (-32603).
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            code: -32603,
            message: message.into(),
            data: Value::Null,
        }
    }

    /// An engine error about the thread `id`: not found as such, the rest
    /// as the library reports what its engine refuses.
    pub(crate) fn of(e: EngineError, id: &str) -> Self {
        match e {
            EngineError::ThreadNotFound(_) => Self::thread_not_found(id),
            e => Self::runtime_unavailable(e.to_string()),
        }
    }
}

/// CodeWhale 0.10 on a [`CodeWhale`]: the same threads, defaults and
/// providers as the seed's protocol, answered as 0.10 answers.
#[derive(Clone, Copy)]
pub struct V0_10<'a> {
    pub(crate) cw: &'a CodeWhale,
}

impl CodeWhale {
    /// This server as CodeWhale 0.10 answers.
    pub fn v0_10(&self) -> V0_10<'_> {
        V0_10 { cw: self }
    }
}

/// The client's key for one intent: given, 1 to 128 characters, no control
/// characters (the library's checks and words).
fn operation_key(key: Option<&str>) -> Result<&str, Refusal> {
    let key = key.ok_or_else(|| {
        Refusal::runtime_unavailable(
            "canonical mutation requires a client-captured operation_key; retain it when \
             retrying an uncertain outcome",
        )
    })?;
    if key.is_empty() || key.len() > 128 || key.chars().any(char::is_control) {
        return Err(Refusal::runtime_unavailable(
            "invalid canonical operation_key",
        ));
    }
    Ok(key)
}

//! Anthropic Messages API: a scripted reply as the exact SSE events of
//! `POST /v1/messages` with `stream: true` (pure, no I/O).

use super::{Context, Frame};
use crate::script::Reply;

/// The frames of a streamed message.
pub(crate) fn stream_frames(_reply: &Reply, _ctx: &Context) -> Vec<Frame> {
    Vec::new()
}

/// Anthropic's error body for an HTTP status.
pub(crate) fn error_body(status: u16) -> serde_json::Value {
    serde_json::json!({"type": "error", "error": {"type": "api_error", "message": format!("gantry-testkit: scripted HTTP {status}")}})
}

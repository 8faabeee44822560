//! Turns: one user input and the agent loop it starts.

use serde::{Deserialize, Serialize};

use crate::{ThreadId, TurnId};

/// Why a failed turn failed, for clients that answer each cause
/// differently (a gRPC status, an HTTP code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnFailure {
    /// The model server could not be reached.
    ModelUnreachable,
    /// The model cannot be used as configured: no provider serves it, its
    /// key is missing or refused, its client is misconfigured.
    ModelUnusable,
    /// Anything else: the model failed or refused the request, a limit.
    Other,
    /// The event log could not be saved (a full disk, a broken database),
    /// so no tool was allowed to act on the world.
    StoreUnavailable,
    /// The model refused to answer (a refusal or content filter stop).
    ModelRefused,
}

/// How a turn ended (or that it has not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The agent loop is still going.
    Running,
    /// The model gave its final answer.
    Completed,
    /// Stopped by an interrupt (or by a crash of the process that ran it).
    Interrupted,
    /// Stopped by an error; the turn's error item says why.
    Failed,
}

impl TurnStatus {
    /// True once the turn has ended.
    pub fn is_final(self) -> bool {
        !matches!(self, TurnStatus::Running)
    }
}

/// Token usage, summed over the model requests it covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cached and cache-written ones included.
    pub input_tokens: u64,
    /// Completion tokens, reasoning ones included.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache (part of `input_tokens`).
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the provider's cache (part of `input_tokens`;
    /// Anthropic bills them apart).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Completion tokens spent on reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }

    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// A turn's metadata (its items live in [`crate::TurnView`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// UUIDv7 id.
    pub id: TurnId,
    /// The thread the turn belongs to.
    pub thread_id: ThreadId,
    /// The user input that started the turn.
    pub input: String,
    /// The idempotency key that input was sent with, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Running until it ends.
    pub status: TurnStatus,
    /// Start time, unix milliseconds.
    pub started_at: i64,
    /// End time, unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<i64>,
    /// Model rounds run so far.
    #[serde(default)]
    pub rounds: u32,
    /// Tokens used by the turn's model requests.
    #[serde(default)]
    pub usage: Usage,
    /// What those tokens cost in USD, from the model catalog (0 when unknown).
    #[serde(default)]
    pub cost_usd: f64,
    /// Why the turn failed or was interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The kind of failure, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<TurnFailure>,
    /// The model the turn ran with (the thread's when it started); `None`
    /// in logs of releases that did not record it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The W3C `traceparent` its input came with: the parent of the turn's
    /// trace span. A request's context, not a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_parent: Option<String>,
}

impl Turn {
    /// A turn starting now, with nothing done yet.
    pub fn started(
        id: TurnId,
        thread_id: ThreadId,
        input: String,
        key: Option<String>,
        now: i64,
    ) -> Turn {
        Turn {
            id,
            thread_id,
            input,
            key,
            status: TurnStatus::Running,
            started_at: now,
            completed_at: None,
            rounds: 0,
            usage: Usage::default(),
            cost_usd: 0.0,
            error: None,
            failure: None,
            model: None,
            trace_parent: None,
        }
    }

    /// Wall time from start to end, once ended.
    pub fn duration_ms(&self) -> Option<u64> {
        self.completed_at
            .map(|end| end.saturating_sub(self.started_at).max(0) as u64)
    }

    /// The W3C trace id (32 hex digits) of the trace the turn's spans
    /// belong to: its caller's, from its `traceparent`, or else one of its
    /// own, its id's 128 bits (a UUIDv7's, random in the low 74). Known
    /// from the turn alone, so the engine's log lines and the telemetry's
    /// spans name the same trace without telling each other. `None` for
    /// an id that is not a UUID (turns of hand-written logs).
    pub fn trace_id(&self) -> Option<String> {
        match self
            .trace_parent
            .as_deref()
            .and_then(|t| t.split('-').nth(1))
        {
            Some(caller) => Some(caller.to_owned()),
            None => self.uuid_hex(),
        }
    }

    /// The span id (16 hex digits) of the turn's own `invoke_agent` span:
    /// the random low 64 bits of its id, for the same reason as
    /// [`Turn::trace_id`].
    pub fn span_id(&self) -> Option<String> {
        self.uuid_hex().map(|hex| hex[16..].to_owned())
    }

    fn uuid_hex(&self) -> Option<String> {
        let id = uuid::Uuid::try_parse(&self.id.0).ok()?;
        // All zeros is not a valid W3C id.
        (!id.is_nil()).then(|| id.simple().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: &str, trace_parent: Option<&str>) -> Turn {
        let mut turn = Turn::started(
            TurnId(id.to_owned()),
            crate::ThreadId("t".to_owned()),
            String::new(),
            None,
            0,
        );
        turn.trace_parent = trace_parent.map(str::to_owned);
        turn
    }

    #[test]
    fn a_turn_names_its_callers_trace_or_one_of_its_own() {
        let id = "0190f1c2-7a3b-7cde-8f01-23456789abcd";
        let own = turn(id, None);
        assert_eq!(
            own.trace_id().as_deref(),
            Some("0190f1c27a3b7cde8f0123456789abcd")
        );
        assert_eq!(own.span_id().as_deref(), Some("8f0123456789abcd"));
        let called = turn(
            id,
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        assert_eq!(
            called.trace_id().as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        // Its own span, a child of the caller's.
        assert_eq!(called.span_id().as_deref(), Some("8f0123456789abcd"));
        assert_eq!(turn("turn-1", None).trace_id(), None);
    }
}

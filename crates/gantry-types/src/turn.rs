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

    /// Where the turn's spans sit in a W3C trace (see [`TurnTrace`]);
    /// `None` for an id that is not a UUID (turns of hand-written logs).
    pub fn trace(&self) -> Option<TurnTrace> {
        TurnTrace::of(&self.id, self.trace_parent.as_deref())
    }
}

/// Where a turn's spans sit in a W3C trace, known from the turn's id and
/// its caller's `traceparent` alone: so the engine's log lines, the
/// `traceparent` of its model requests and the telemetry's spans name the
/// same trace and spans without telling each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnTrace {
    /// The trace (32 hex digits): the caller's, or else one of the turn's
    /// own, its id's 128 bits (a UUIDv7's, random in the low 74).
    pub trace_id: String,
    /// The turn's own `invoke_agent` span (16 hex digits): its id's random
    /// low 64 bits.
    pub span_id: String,
    /// Whether the trace is a caller's.
    pub from_caller: bool,
    /// The caller's trace flags (sampled for a trace of the turn's own).
    flags: String,
    /// The turn id's 128 bits, from which its model calls' span ids come.
    seed: u128,
}

impl TurnTrace {
    /// The trace of turn `id`, continuing `trace_parent` if given.
    pub fn of(id: &TurnId, trace_parent: Option<&str>) -> Option<TurnTrace> {
        let seed = uuid::Uuid::try_parse(&id.0).ok()?.as_u128();
        // All zeros is not a valid W3C id.
        if seed == 0 {
            return None;
        }
        let own = format!("{seed:032x}");
        let caller = trace_parent
            .map(|t| t.split('-').collect::<Vec<_>>())
            .and_then(|parts| match parts[..] {
                [_, trace, _, flags] => Some((trace.to_owned(), flags.to_owned())),
                _ => None,
            });
        let span_id = own[16..].to_owned();
        Some(match caller {
            Some((trace_id, flags)) => TurnTrace {
                trace_id,
                span_id,
                from_caller: true,
                flags,
                seed,
            },
            None => TurnTrace {
                trace_id: own,
                span_id,
                from_caller: false,
                flags: "01".to_owned(),
                seed,
            },
        })
    }

    /// The span id of the `chat` span of the turn's model request of
    /// `round`: FNV-1a of the turn's id and the round, never zero.
    pub fn model_call_span_id(&self, round: u32) -> String {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in self
            .seed
            .to_be_bytes()
            .into_iter()
            .chain(round.to_be_bytes())
        {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{:016x}", hash.max(1))
    }

    /// The `traceparent` the model request of `round` carries: the turn's
    /// trace, that request's `chat` span as the parent the provider sees.
    pub fn model_call_traceparent(&self, round: u32) -> String {
        format!(
            "00-{}-{}-{}",
            self.trace_id,
            self.model_call_span_id(round),
            self.flags
        )
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
        let own = turn(id, None).trace().expect("a UUID");
        assert_eq!(own.trace_id, "0190f1c27a3b7cde8f0123456789abcd");
        assert_eq!(own.span_id, "8f0123456789abcd");
        assert!(!own.from_caller);
        let called = turn(
            id,
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"),
        )
        .trace()
        .expect("a UUID");
        assert_eq!(called.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        // Its own span, a child of the caller's.
        assert_eq!(called.span_id, "8f0123456789abcd");
        assert!(turn("turn-1", None).trace().is_none());

        // Each model request its own span, the same whoever computes it;
        // the caller's flags (here: not sampled) go on.
        let first = called.model_call_traceparent(1);
        assert_eq!(first, called.model_call_traceparent(1));
        assert_ne!(first, called.model_call_traceparent(2));
        let parts: Vec<&str> = first.split('-').collect();
        assert_eq!(parts[..2], ["00", "4bf92f3577b34da6a3ce929d0e0e4736"]);
        assert_eq!(parts[2], called.model_call_span_id(1));
        assert_eq!(parts[2].len(), 16);
        assert_eq!(parts[3], "00");
        assert!(own.model_call_traceparent(1).ends_with("-01"));
    }
}

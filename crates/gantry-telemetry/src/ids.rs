//! The ids of a turn's own span. A turn's log lines name its trace and
//! span (`Turn::trace_id`, `Turn::span_id`: known from the turn alone),
//! so its `invoke_agent` span must get exactly those. The SDK takes ids
//! only from its generator: this one hands out the ids set with
//! [`with_turn_ids`] while that span is built, random ones otherwise.

use std::cell::Cell;

use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};

thread_local! {
    /// Ids for the span being built on this thread, taken once each.
    static NEXT: Cell<(Option<TraceId>, Option<SpanId>)> = const { Cell::new((None, None)) };
}

/// Runs `build` (which builds one span, synchronously) with `trace` and
/// `span` as the ids the generator gives it; where the span has a parent,
/// the SDK takes the parent's trace id and leaves `trace` unused.
pub(crate) fn with_turn_ids<T>(
    trace: Option<TraceId>,
    span: Option<SpanId>,
    build: impl FnOnce() -> T,
) -> T {
    NEXT.with(|next| next.set((trace, span)));
    let built = build();
    NEXT.with(|next| next.set((None, None)));
    built
}

/// The generator of the tracer provider (see the module's doc).
#[derive(Debug, Default)]
pub(crate) struct TurnIds {
    random: RandomIdGenerator,
}

impl IdGenerator for TurnIds {
    fn new_trace_id(&self) -> TraceId {
        NEXT.with(|next| {
            let (trace, span) = next.get();
            next.set((None, span));
            trace
        })
        .unwrap_or_else(|| self.random.new_trace_id())
    }

    fn new_span_id(&self) -> SpanId {
        NEXT.with(|next| {
            let (trace, span) = next.get();
            next.set((trace, None));
            span
        })
        .unwrap_or_else(|| self.random.new_span_id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ids_set_go_to_one_span_then_random_ones() {
        let ids = TurnIds::default();
        let trace = TraceId::from_hex("0190f1c27a3b7cde8f0123456789abcd").ok();
        let span = SpanId::from_hex("8f0123456789abcd").ok();
        let (t, s) = with_turn_ids(trace, span, || (ids.new_trace_id(), ids.new_span_id()));
        assert_eq!((Some(t), Some(s)), (trace, span));
        assert_ne!(Some(ids.new_span_id()), span, "taken once");
        assert_ne!(Some(ids.new_trace_id()), trace);
    }
}

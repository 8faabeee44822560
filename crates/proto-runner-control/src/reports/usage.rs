//! Token usage as 0.7.0 reports it: one `ThreadTokenUsageUpdate` per model
//! response, as CompanyHelm's runner forwards each of codex's
//! `thread/tokenUsage/updated`: `last_usage` that response's tokens,
//! `total_usage` the thread's since it began, with the model's context
//! window. No request id: it answers none.

use gantry_runner_protocol::messages::{
    ClientMessage, Payload, ThreadTokenUsageUpdate, TokenUsageBreakdown,
};
use gantry_types::{ThreadId, ThreadView, TurnId, TurnStatus, Usage};

/// What a thread has used: its ended turns' whole usage, and the running
/// turn's responses so far.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Tally {
    ended: Usage,
    running: Usage,
}

impl Tally {
    /// The thread's usage as its view holds it (a running turn's grows with
    /// each response in the view too).
    pub(super) fn of(view: &ThreadView) -> Self {
        let mut tally = Tally::default();
        for t in &view.turns {
            if t.turn.status == TurnStatus::Running {
                tally.running.add(&t.turn.usage);
            } else {
                tally.ended.add(&t.turn.usage);
            }
        }
        tally
    }

    /// A response of the running turn used `usage`: the update saying so.
    pub(super) fn responded(
        &mut self,
        thread: &ThreadId,
        turn: &TurnId,
        usage: &Usage,
        context_window: Option<u64>,
    ) -> ClientMessage {
        self.running.add(usage);
        let mut total = self.ended;
        total.add(&self.running);
        ClientMessage {
            request_id: None,
            payload: Payload::TokenUsage(ThreadTokenUsageUpdate {
                thread_id: thread.to_string(),
                sdk_turn_id: turn.to_string(),
                total_usage: Some(breakdown(&total)),
                last_usage: Some(breakdown(usage)),
                model_context_window: context_window
                    .and_then(|w| i64::try_from(w).ok())
                    .filter(|w| *w > 0),
            }),
        }
    }

    /// The running turn ended having used `usage` in all (responses whose
    /// provider reported nothing included, as far as the engine knows).
    pub(super) fn turn_ended(&mut self, usage: &Usage) {
        self.ended.add(usage);
        self.running = Usage::default();
    }
}

/// Usage in the protocol's terms (counts past `i64::MAX` are capped).
fn breakdown(usage: &Usage) -> TokenUsageBreakdown {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    TokenUsageBreakdown {
        input_tokens: count(usage.input_tokens),
        cached_input_tokens: count(usage.cached_input_tokens),
        output_tokens: count(usage.output_tokens),
        reasoning_output_tokens: count(usage.reasoning_tokens),
        total_tokens: count(usage.total()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    fn totals(message: &ClientMessage) -> (i64, i64, Option<i64>) {
        let Payload::TokenUsage(u) = &message.payload else {
            panic!("not a usage update: {message:?}");
        };
        let (Some(total), Some(last)) = (&u.total_usage, &u.last_usage) else {
            panic!("usage without its numbers: {u:?}");
        };
        (
            total.total_tokens,
            last.total_tokens,
            u.model_context_window,
        )
    }

    #[test]
    fn each_response_says_its_own_tokens_and_the_threads_so_far() {
        let (thread, turn) = (ThreadId::from("t"), TurnId::from("u"));
        let mut tally = Tally::default();
        let first = tally.responded(&thread, &turn, &tokens(100, 10), Some(1_000_000));
        assert_eq!(totals(&first), (110, 110, Some(1_000_000)));
        let second = tally.responded(&thread, &turn, &tokens(150, 20), None);
        assert_eq!(totals(&second), (280, 170, None));
        // The turn's whole usage counts from its end on, once.
        tally.turn_ended(&tokens(250, 30));
        let next = tally.responded(&thread, &TurnId::from("v"), &tokens(1, 1), Some(0));
        assert_eq!(totals(&next), (282, 2, None), "a window of 0 is unknown");
    }
}

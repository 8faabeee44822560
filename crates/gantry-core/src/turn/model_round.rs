//! One model request: stream the answer into items and collect its tool calls.

use futures_util::StreamExt;
use gantry_llm::{ModelClient, ModelEvent, ModelRequest, ToolCall};
use gantry_types::{DeltaKind, Item, ItemKind, ItemStatus, Usage};

use super::{Emitter, Loop, Outcome};

/// The model's complete answer of one round.
pub(super) struct Answer {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}

/// An item being streamed into.
struct Streaming {
    item: Item,
    text: String,
}

impl Streaming {
    fn push(em: &Emitter, slot: &mut Option<Streaming>, round: u32, delta: String, agent: bool) {
        let s = slot.get_or_insert_with(|| {
            let kind = if agent {
                ItemKind::AgentMessage {
                    text: String::new(),
                }
            } else {
                ItemKind::Reasoning {
                    text: String::new(),
                }
            };
            Streaming {
                item: em.start_item(round, kind),
                text: String::new(),
            }
        });
        s.text.push_str(&delta);
        let kind = if agent {
            DeltaKind::AgentText(delta)
        } else {
            DeltaKind::Reasoning(delta)
        };
        em.delta(&s.item.id, kind);
    }

    /// Completes the item with the text streamed so far.
    fn finish(slot: Option<Streaming>, em: &Emitter, status: ItemStatus) -> String {
        let Some(Streaming { mut item, text }) = slot else {
            return String::new();
        };
        item.kind = match item.kind {
            ItemKind::AgentMessage { .. } => ItemKind::AgentMessage { text: text.clone() },
            _ => ItemKind::Reasoning { text: text.clone() },
        };
        em.complete_item(item, status);
        text
    }
}

impl Loop<'_> {
    /// Streams one answer. On failure or interrupt, what was streamed is kept
    /// in completed items and the outcome to end the turn with is returned.
    pub(super) async fn model_round(
        &mut self,
        client: &dyn ModelClient,
        request: ModelRequest,
    ) -> Result<Answer, Outcome> {
        let round = self.rounds;
        let em = self.em;
        let mut stream = client.stream(request);
        let mut text: Option<Streaming> = None;
        let mut reasoning: Option<Streaming> = None;
        let mut tool_calls = Vec::new();
        let mut usage = Usage::default();
        let end = loop {
            let event = tokio::select! {
                biased;
                () = self.cancel.cancelled() => break Some(Outcome::Interrupted),
                event = stream.next() => event,
            };
            match event {
                Some(Ok(ModelEvent::TextDelta(t))) => {
                    Streaming::push(em, &mut text, round, t, true)
                }
                Some(Ok(ModelEvent::ReasoningDelta(t))) => {
                    Streaming::push(em, &mut reasoning, round, t, false)
                }
                Some(Ok(ModelEvent::ToolCall(call))) => tool_calls.push(call),
                Some(Ok(ModelEvent::Usage(u))) => usage = u,
                Some(Ok(ModelEvent::Retrying {
                    attempt,
                    delay_ms,
                    reason,
                })) => {
                    tracing::warn!(attempt, delay_ms, %reason, "model request failed; retrying");
                }
                Some(Ok(ModelEvent::Finished { .. })) => break None,
                Some(Err(e)) => break Some(Outcome::Failed(e.to_string())),
                None => {
                    break Some(Outcome::Failed(
                        "model stream ended without a finish event".to_owned(),
                    ));
                }
            }
        };
        // Stop the request before closing items: an interrupt must not wait.
        drop(stream);
        let status = match &end {
            None => ItemStatus::Completed,
            Some(Outcome::Interrupted) => ItemStatus::Interrupted,
            Some(_) => ItemStatus::Failed,
        };
        Streaming::finish(reasoning, em, status);
        let text = Streaming::finish(text, em, status);
        match end {
            None => Ok(Answer {
                text,
                tool_calls,
                usage,
            }),
            Some(outcome) => {
                self.usage.add(&usage);
                Err(outcome)
            }
        }
    }
}

//! One model request: stream the answer into items and collect its tool calls.

use futures_util::StreamExt;
use gantry_llm::{ModelClient, ModelEvent, ModelRequest, ReasoningBlock, ToolCall};
use gantry_types::{DeltaKind, Item, ItemKind, ItemStatus, Usage};

use super::{Emitter, Loop, Outcome};

/// The model's complete answer of one round.
pub(super) struct Answer {
    pub reasoning: Vec<ReasoningBlock>,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}

/// An item being streamed into: the agent message, or the current reasoning block.
struct Streaming {
    item: Item,
    text: String,
}

impl Streaming {
    fn start(em: &Emitter, round: u32, kind: ItemKind) -> Self {
        Streaming {
            item: em.start_item(round, kind),
            text: String::new(),
        }
    }

    fn push(&mut self, em: &Emitter, delta: String) {
        self.text.push_str(&delta);
        let kind = match self.item.kind {
            ItemKind::AgentMessage { .. } => DeltaKind::AgentText(delta),
            _ => DeltaKind::Reasoning(delta),
        };
        em.delta(&self.item.id, kind);
    }

    /// Completes the item with the text streamed so far.
    fn finish(mut self, em: &Emitter, status: ItemStatus) -> String {
        match &mut self.item.kind {
            ItemKind::AgentMessage { text } | ItemKind::Reasoning { text, .. } => {
                text.clone_from(&self.text);
            }
            _ => {}
        }
        em.complete_item(self.item, status);
        self.text
    }
}

fn reasoning_kind() -> ItemKind {
    ItemKind::Reasoning {
        text: String::new(),
        signature: None,
        opaque: None,
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
        let mut thinking: Option<Streaming> = None;
        let mut reasoning = Vec::new();
        let mut tool_calls = Vec::new();
        let mut usage = Usage::default();
        let end = loop {
            let event = tokio::select! {
                biased;
                () = self.cancel.cancelled() => break Some(Outcome::Interrupted),
                event = stream.next() => event,
            };
            match event {
                Some(Ok(ModelEvent::TextDelta(t))) => text
                    .get_or_insert_with(|| {
                        Streaming::start(
                            em,
                            round,
                            ItemKind::AgentMessage {
                                text: String::new(),
                            },
                        )
                    })
                    .push(em, t),
                Some(Ok(ModelEvent::ReasoningDelta(t))) => thinking
                    .get_or_insert_with(|| Streaming::start(em, round, reasoning_kind()))
                    .push(em, t),
                Some(Ok(ModelEvent::ReasoningEnd { signature, opaque })) => {
                    // Ends the current block (or stands alone for blocks
                    // without text); the next deltas start a new item.
                    let mut block = thinking
                        .take()
                        .unwrap_or_else(|| Streaming::start(em, round, reasoning_kind()));
                    block.item.kind = ItemKind::Reasoning {
                        text: String::new(),
                        signature: signature.clone(),
                        opaque: opaque.clone(),
                    };
                    let text = block.finish(em, ItemStatus::Completed);
                    reasoning.push(ReasoningBlock {
                        text,
                        signature,
                        opaque,
                    });
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
        if let Some(block) = thinking {
            let text = block.finish(em, status);
            reasoning.push(ReasoningBlock {
                text,
                ..ReasoningBlock::default()
            });
        }
        let text = text.map(|t| t.finish(em, status)).unwrap_or_default();
        match end {
            None => Ok(Answer {
                reasoning,
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

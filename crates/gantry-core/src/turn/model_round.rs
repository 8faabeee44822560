//! One model request: stream the answer into items and collect its tool calls.

use std::collections::HashMap;

use futures_util::StreamExt;
use gantry_llm::{ModelClient, ModelEvent, ModelRequest, ReasoningBlock, ToolCall};
use gantry_types::{
    DeltaKind, EventPayload, Item, ItemKind, ItemStatus, ModelCall, TurnFailure, Usage,
};

use super::{Emitter, Loop, Outcome};
use crate::context::Counter;

/// The model's complete answer of one round.
pub(super) struct Answer {
    pub reasoning: Vec<ReasoningBlock>,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// Open items the [`StreamedTool`]'s calls streamed into, by call id.
    pub streamed: HashMap<String, Item>,
}

/// A tool whose calls' arguments stream into an item of their own while the
/// model writes them.
pub(super) struct StreamedTool {
    /// The tool's name.
    pub name: String,
    /// The kind of item its arguments stream into.
    pub kind: ItemKind,
}

/// An item being streamed into: the agent message, or the current reasoning block.
struct Streaming {
    item: Item,
    text: String,
}

impl Streaming {
    async fn start(em: &Emitter, round: u32, kind: ItemKind) -> Self {
        Streaming {
            item: em.start_item(round, kind).await,
            text: String::new(),
        }
    }

    /// The item in `slot`, started (announced) if there is none yet.
    async fn open<'a>(
        slot: &'a mut Option<Streaming>,
        em: &Emitter,
        round: u32,
        kind: impl FnOnce() -> ItemKind,
    ) -> &'a mut Streaming {
        match slot {
            Some(streaming) => streaming,
            None => slot.insert(Streaming::start(em, round, kind()).await),
        }
    }

    async fn push(&mut self, em: &Emitter, delta: String) {
        self.text.push_str(&delta);
        let kind = match self.item.kind {
            ItemKind::AgentMessage { .. } => DeltaKind::AgentText(delta),
            ItemKind::StructuredOutput { .. } => DeltaKind::StructuredOutput(delta),
            _ => DeltaKind::Reasoning(delta),
        };
        em.delta(&self.item.id, kind).await;
    }

    /// Completes the item with the text streamed so far.
    async fn finish(mut self, em: &Emitter, status: ItemStatus) -> String {
        match &mut self.item.kind {
            ItemKind::AgentMessage { text } | ItemKind::Reasoning { text, .. } => {
                text.clone_from(&self.text);
            }
            _ => {}
        }
        em.complete_item(self.item, status).await;
        self.text
    }
}

/// The streamed arguments a complete call was assembled from: the ones
/// with exactly its text, else the oldest of its tool.
fn written_by(writing: &[(u64, Streaming)], call: &ToolCall) -> Option<usize> {
    writing
        .iter()
        .position(|(_, s)| s.text == call.arguments)
        .or_else(|| (!writing.is_empty()).then_some(0))
}

/// A response's usage as estimated: the prompt as counted before it went
/// out, the answer's text and calls as written.
fn estimated(prompt: u64, text: &str, calls: &[ToolCall]) -> Usage {
    let written: u64 = calls
        .iter()
        .map(|c| Counter::rough(&c.name) + Counter::rough(&c.arguments))
        .sum();
    Usage {
        input_tokens: prompt,
        output_tokens: Counter::rough(text) + written,
        ..Usage::default()
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
    /// Records what one model response used, when its provider said
    /// (a response cut by an interrupt usually never does).
    pub(super) async fn responded(&self, usage: &Usage, call: ModelCall) {
        if *usage == Usage::default() {
            return;
        }
        let limit = self.limit();
        self.em
            .emit(EventPayload::ModelResponded {
                turn_id: self.em.turn_id().clone(),
                round: self.rounds,
                usage: *usage,
                context_window: (limit > 0).then_some(limit),
                call: Some(call),
            })
            .await;
    }

    pub(super) async fn model_round(
        &mut self,
        client: &dyn ModelClient,
        request: ModelRequest,
    ) -> Result<Answer, Outcome> {
        let round = self.rounds;
        let em = self.em;
        self.overflowed = false;
        // What the prompt is thought to hold, for a server that never says.
        let prompt_estimate = self.context_used(&request.tools);
        let mut call = ModelCall {
            started_at: em.now(),
            first_token_at: None,
            ended_at: None,
            finish_reason: None,
            response_id: None,
            response_model: None,
        };
        let mut stream = client.stream(request);
        let mut text: Option<Streaming> = None;
        let mut thinking: Option<Streaming> = None;
        let mut reasoning = Vec::new();
        let mut tool_calls = Vec::new();
        // Calls of the streamed tool still being written, by call index.
        let mut writing: Vec<(u64, Streaming)> = Vec::new();
        let mut streamed = HashMap::new();
        let mut usage = Usage::default();
        let end = loop {
            let event = tokio::select! {
                biased;
                () = self.cancel.cancelled() => break Some(Outcome::Interrupted),
                event = stream.next() => event,
            };
            if call.first_token_at.is_none()
                && matches!(
                    event,
                    Some(Ok(ModelEvent::TextDelta(_)
                        | ModelEvent::ReasoningDelta(_)
                        | ModelEvent::ReasoningEnd { .. }
                        | ModelEvent::ToolCallDelta { .. }
                        | ModelEvent::ToolCall(_)))
                )
            {
                call.first_token_at = Some(em.now());
            }
            match event {
                Some(Ok(ModelEvent::Response { id, model })) => {
                    call.response_id = id;
                    call.response_model = model;
                }
                Some(Ok(ModelEvent::TextDelta(t))) => {
                    let agent_message = || ItemKind::AgentMessage {
                        text: String::new(),
                    };
                    Streaming::open(&mut text, em, round, agent_message)
                        .await
                        .push(em, t)
                        .await;
                }
                Some(Ok(ModelEvent::ReasoningDelta(t))) => {
                    Streaming::open(&mut thinking, em, round, reasoning_kind)
                        .await
                        .push(em, t)
                        .await;
                }
                Some(Ok(ModelEvent::ReasoningEnd { signature, opaque })) => {
                    // Ends the current block (or stands alone for blocks
                    // without text); the next deltas start a new item.
                    let mut block = match thinking.take() {
                        Some(block) => block,
                        None => Streaming::start(em, round, reasoning_kind()).await,
                    };
                    block.item.kind = ItemKind::Reasoning {
                        text: String::new(),
                        signature: signature.clone(),
                        opaque: opaque.clone(),
                    };
                    let text = block.finish(em, ItemStatus::Completed).await;
                    reasoning.push(ReasoningBlock {
                        text,
                        signature,
                        opaque,
                    });
                }
                Some(Ok(ModelEvent::ToolCallDelta {
                    index,
                    name,
                    arguments,
                })) => {
                    if let Some(tool) = self.streamed_tool.as_ref().filter(|t| t.name == name) {
                        let at = match writing.iter().position(|(i, _)| *i == index) {
                            Some(at) => at,
                            None => {
                                let item = Streaming::start(em, round, tool.kind.clone()).await;
                                writing.push((index, item));
                                writing.len() - 1
                            }
                        };
                        writing[at].1.push(em, arguments).await;
                    }
                }
                Some(Ok(ModelEvent::ToolCall(call))) => {
                    let of_streamed = self
                        .streamed_tool
                        .as_ref()
                        .is_some_and(|t| t.name == call.name);
                    if let Some(at) = written_by(&writing, &call).filter(|_| of_streamed) {
                        let (_, item) = writing.remove(at);
                        streamed.insert(call.id.clone(), item.item);
                    }
                    tool_calls.push(call);
                }
                Some(Ok(ModelEvent::Usage(u))) => usage = u,
                Some(Ok(ModelEvent::Retrying {
                    attempt,
                    delay_ms,
                    reason,
                })) => {
                    tracing::warn!(attempt, delay_ms, %reason, "model request failed; retrying");
                }
                // A refusal ends the turn: its words are kept as the
                // answer, and the turn says it was refused.
                Some(Ok(ModelEvent::Finished { finish_reason }))
                    if finish_reason.as_deref() == Some(gantry_llm::REFUSAL) =>
                {
                    call.finish_reason = finish_reason;
                    break Some(Outcome::Failed(
                        TurnFailure::ModelRefused,
                        "the model refused to answer".to_owned(),
                    ));
                }
                Some(Ok(ModelEvent::Finished { finish_reason })) => {
                    call.finish_reason = finish_reason;
                    break None;
                }
                Some(Err(e)) => {
                    self.overflowed = super::compaction::is_overflow(&e);
                    break Some(Outcome::Failed(super::failure_of(&e), e.to_string()));
                }
                None => {
                    break Some(Outcome::Failed(
                        TurnFailure::Other,
                        "model stream ended without a finish event".to_owned(),
                    ));
                }
            }
        };
        // Stop the request before closing items: an interrupt must not wait.
        drop(stream);
        call.ended_at = Some(em.now());
        let refused = matches!(&end, Some(Outcome::Failed(TurnFailure::ModelRefused, _)));
        let status = match &end {
            None => ItemStatus::Completed,
            // The refusal itself is a complete answer.
            _ if refused => ItemStatus::Completed,
            Some(Outcome::Interrupted) => ItemStatus::Interrupted,
            Some(_) => ItemStatus::Failed,
        };
        if let Some(block) = thinking {
            let text = block.finish(em, status).await;
            reasoning.push(ReasoningBlock {
                text,
                ..ReasoningBlock::default()
            });
        }
        let text = match text {
            Some(t) => t.finish(em, status).await,
            None => String::new(),
        };
        // Some servers (llama.cpp's Python one) send no usage in a stream:
        // a complete answer gets an estimate rather than nothing.
        if end.is_none() && usage == Usage::default() {
            usage = estimated(prompt_estimate, &text, &tool_calls);
        }
        // Arguments that never became a call are not a submission.
        let unfinished = if end.is_none() || refused {
            ItemStatus::Failed
        } else {
            status
        };
        for (_, item) in writing {
            em.complete_item(item.item, unfinished).await;
        }
        // After the response's items, before its tool calls run: what this
        // response cost is known now, whatever the calls do.
        self.responded(&usage, call).await;
        match end {
            None => Ok(Answer {
                reasoning,
                text,
                tool_calls,
                usage,
                streamed,
            }),
            Some(outcome) => {
                for item in streamed.into_values() {
                    em.complete_item(item, status).await;
                }
                self.usage.add(&usage);
                Err(outcome)
            }
        }
    }
}

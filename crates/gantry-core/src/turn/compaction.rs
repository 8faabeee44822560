//! Context compaction: when the next request would overflow the model's
//! context window, the model summarises the conversation so far, and the
//! history becomes the most recent user messages plus that summary.

use futures_util::StreamExt;
use gantry_llm::{Message, ModelClient, ModelError, ModelEvent, ModelRequest};
use gantry_types::{ItemKind, ItemStatus, ToolSpec, TurnFailure, Usage};

use super::{Loop, Outcome};
use crate::context::Counter;

/// Told to the model that writes the summary.
const SUMMARY_INSTRUCTIONS: &str = "You are compacting the conversation of a coding agent so it \
fits the model's context window. Write a summary another agent can continue from: the user's \
goals and requests, decisions made, files created or changed (with paths), commands run and what \
they showed, the current state, and what remains to be done. Be complete but concise. Do not call \
tools.";
/// The request that closes the conversation to summarise.
const SUMMARY_REQUEST: &str =
    "Summarize the conversation so far for a handoff, following your instructions.";
/// Opens the summary in the compacted history.
const SUMMARY_PREFIX: &str =
    "Summary of the earlier conversation (compacted to fit the context window):\n\n";
/// Most tokens of recent user messages kept word for word.
const KEEP_TOKENS: u64 = 20_000;
/// Summary attempts, each with fewer of the oldest messages, before giving up.
const MAX_ATTEMPTS: usize = 6;

/// The history after a compaction: kept user messages, then the summary.
/// Also how [`super::history`] rebuilds it from a `context_compaction` item.
pub(crate) fn compacted_history(summary: &str, kept: &[String]) -> Vec<Message> {
    let mut out: Vec<Message> = kept
        .iter()
        .map(|text| Message::user(text.clone()))
        .collect();
    if !summary.is_empty() {
        out.push(Message::user(format!("{SUMMARY_PREFIX}{summary}")));
    }
    out
}

/// Why collecting a summary stopped.
enum SummaryError {
    Interrupted,
    Model(ModelError),
}

impl Loop<'_> {
    /// Estimated tokens of the next request: the provider's count of the last
    /// request plus an estimate of what was added since, or an estimate of
    /// everything before the first answer.
    pub(super) fn context_used(&self, tools: &[ToolSpec]) -> u64 {
        match self.known {
            Some((tokens, len)) if len <= self.messages.len() => {
                tokens + self.counter.messages(&self.messages[len..], false)
            }
            _ => {
                let instructions = self.spec.instructions.as_deref();
                let rough = self
                    .counter
                    .request(instructions, &self.messages, tools, false);
                let limit = self.limit();
                // Only near the threshold is the exact count worth its cost.
                if limit > 0 && rough as f64 > limit as f64 * self.shared.config.compact_at * 0.5 {
                    self.counter
                        .request(instructions, &self.messages, tools, true)
                } else {
                    rough
                }
            }
        }
    }

    /// The model's context window, 0 when unknown.
    pub(super) fn limit(&self) -> u64 {
        self.shared
            .models
            .model_info(&self.spec.model)
            .map_or(0, |info| info.limit.context)
    }

    /// Compacts if the next request would pass the threshold.
    pub(super) async fn compact_if_needed(
        &mut self,
        client: &dyn ModelClient,
        tools: &[ToolSpec],
    ) -> Result<(), Outcome> {
        let limit = self.limit();
        if limit == 0 {
            return Ok(());
        }
        let used = self.context_used(tools);
        if (used as f64) <= limit as f64 * self.shared.config.compact_at {
            return Ok(());
        }
        self.compact(client, "auto", used, limit, tools).await
    }

    /// Replaces the history with recent user messages and a model-written
    /// summary, recorded as a `context_compaction` item.
    pub(super) async fn compact(
        &mut self,
        client: &dyn ModelClient,
        trigger: &str,
        before: u64,
        limit: u64,
        tools: &[ToolSpec],
    ) -> Result<(), Outcome> {
        let kind = |summary: String, kept: Vec<String>, after: u64| ItemKind::ContextCompaction {
            summary,
            kept_user_messages: kept,
            tokens_before: before,
            tokens_after: after,
            trigger: trigger.to_owned(),
        };
        let mut item = self
            .em
            .start_item(self.rounds, kind(String::new(), Vec::new(), 0))
            .await;
        let summary = match self.summarise(client, limit).await {
            Ok(summary) => summary,
            Err(outcome) => {
                let status = match outcome {
                    Outcome::Interrupted => ItemStatus::Interrupted,
                    _ => ItemStatus::Failed,
                };
                self.em.complete_item(item, status).await;
                return Err(outcome);
            }
        };
        let kept = self.recent_user_messages(limit);
        let messages = compacted_history(&summary, &kept);
        let after =
            self.counter
                .request(self.spec.instructions.as_deref(), &messages, tools, false);
        self.messages = messages.into();
        self.known = None;
        item.kind = kind(summary, kept, after);
        self.em.complete_item(item, ItemStatus::Completed).await;
        Ok(())
    }

    /// Asks the model for the summary; drops the oldest messages and retries
    /// while the summary request itself is too large.
    async fn summarise(&mut self, client: &dyn ModelClient, limit: u64) -> Result<String, Outcome> {
        let mut source: Vec<Message> = self.messages.to_vec();
        let fits = |source: &[Message]| {
            limit == 0 || self.counter.messages(source, false) + 1_000 < limit * 95 / 100
        };
        for _ in 0..MAX_ATTEMPTS {
            while !fits(&source) && source.len() > 1 {
                drop_oldest(&mut source);
            }
            let mut messages = source.clone();
            messages.push(Message::user(SUMMARY_REQUEST.to_owned()));
            let request = ModelRequest {
                model: self.spec.model.clone(),
                instructions: Some(SUMMARY_INSTRUCTIONS.to_owned()),
                messages: messages.into(),
                ..ModelRequest::default()
            };
            let mut call = gantry_types::ModelCall {
                started_at: self.em.now(),
                first_token_at: None,
                ended_at: None,
                finish_reason: None,
                response_id: None,
                response_model: None,
            };
            match self.collect_text(client, request, &mut call).await {
                Ok((text, usage)) => {
                    self.usage.add(&usage);
                    call.ended_at = Some(self.em.now());
                    self.responded(&usage, call).await;
                    return Ok(text);
                }
                Err(SummaryError::Interrupted) => return Err(Outcome::Interrupted),
                Err(SummaryError::Model(e)) if is_overflow(&e) && source.len() > 1 => {
                    drop_oldest(&mut source);
                }
                Err(SummaryError::Model(e)) => {
                    return Err(Outcome::Failed(
                        super::failure_of(&e),
                        format!("context compaction failed: {e}"),
                    ));
                }
            }
        }
        Err(Outcome::Failed(
            TurnFailure::Other,
            "context compaction failed: the conversation does not fit the model's context even after dropping its oldest messages".to_owned(),
        ))
    }

    /// Streams a request to its end and returns its text, without items;
    /// notes in `call` who answered.
    async fn collect_text(
        &self,
        client: &dyn ModelClient,
        request: ModelRequest,
        call: &mut gantry_types::ModelCall,
    ) -> Result<(String, Usage), SummaryError> {
        let mut stream = client.stream(request);
        let mut text = String::new();
        let mut usage = Usage::default();
        loop {
            let event = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Err(SummaryError::Interrupted),
                event = stream.next() => event,
            };
            match event {
                Some(Ok(ModelEvent::TextDelta(t))) => text.push_str(&t),
                Some(Ok(ModelEvent::Response { id, model })) => {
                    call.response_id = id;
                    call.response_model = model;
                }
                Some(Ok(ModelEvent::Usage(u))) => usage = u,
                Some(Ok(ModelEvent::Finished { .. })) => return Ok((text, usage)),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(SummaryError::Model(e)),
                None => {
                    return Err(SummaryError::Model(ModelError::StreamCut(
                        "summary stream ended without a finish event".to_owned(),
                    )));
                }
            }
        }
    }

    /// The latest user messages, oldest first, within the keep budget.
    fn recent_user_messages(&self, limit: u64) -> Vec<String> {
        let budget = if limit == 0 {
            KEEP_TOKENS
        } else {
            KEEP_TOKENS.min(limit / 10)
        };
        let mut kept = Vec::new();
        let mut used = 0;
        for m in self.messages.iter().rev() {
            let Message::User { text, .. } = m else {
                continue;
            };
            if text.starts_with(SUMMARY_PREFIX) {
                continue;
            }
            used += Counter::rough(text);
            if used > budget {
                break;
            }
            kept.push(text.clone());
        }
        kept.reverse();
        kept
    }
}

/// Drops about a fifth of the oldest messages (at least one), and any tool
/// results left without their call.
fn drop_oldest(source: &mut Vec<Message>) {
    let n = (source.len() / 5)
        .max(1)
        .min(source.len().saturating_sub(1));
    source.drain(..n);
    while matches!(source.first(), Some(Message::ToolResult { .. })) && source.len() > 1 {
        source.remove(0);
    }
}

/// A provider's "the prompt is too long" answer.
pub(super) fn is_overflow(e: &ModelError) -> bool {
    let ModelError::BadRequest { body, .. } = e else {
        return false;
    };
    let body = body.to_ascii_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "too long",
        "maximum context",
        "too many tokens",
    ]
    .iter()
    .any(|p| body.contains(p))
}

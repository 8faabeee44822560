//! A workspace's engine notifications as Pando topics. Pure: the publisher
//! (`crate::publisher`) feeds it the notifications of the workspace's
//! threads and sends what it returns. A turn is `llm.start` .. `llm.end`
//! (with the turn's real token counts); the agent's text deltas are
//! `llm.token`s; each tool call is one `tool.start` and one `tool.end`
//! (by `call_id`); every user message and every model round's assistant
//! message is one `message.append`, with the id and text `message.list`
//! gives (the mapper gathers a round as the projection's conversation
//! does, so both agree).

use std::collections::{HashMap, HashSet};

use gantry_core::Notification;
use gantry_core::projection::{Part, tool_outcome};
use gantry_types::{DeltaKind, Event, EventPayload, Item, ItemId, ItemKind, ThreadId, TurnId};
use serde_json::{Value, json};

use crate::messages::content_of;
use crate::wire::topic;

/// Bytes of a tool's result `tool.end` carries before `...`.
pub const RESULT_LIMIT: usize = 512;

/// What a notification asks the publisher to do.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Out {
    /// Publish `payload` on `topic` about `session`.
    Publish {
        topic: &'static str,
        session: String,
        payload: Value,
    },
    /// The session changed: `session.update` and the new `session.list`.
    Updated(String),
    /// The session left: `session.deleted` and the new `session.list`.
    Deleted(String),
}

/// A model round's assistant message being gathered.
struct Round {
    key: (TurnId, u32),
    first_id: String,
    parts: Vec<Part>,
    texts: usize,
}

#[derive(Default)]
struct ThreadState {
    round: Option<Round>,
    /// Items seen (a refused call may come completed, never started).
    seen: HashSet<String>,
    /// Tool calls started and not ended.
    tools: HashSet<String>,
}

/// Maps notifications of a workspace's threads to topics.
#[derive(Default)]
pub(crate) struct TopicMapper {
    threads: HashMap<ThreadId, ThreadState>,
    /// Bytes of each agent message in progress sent as tokens.
    streamed: HashMap<ItemId, usize>,
    /// Items whose next delta is their whole text so far (a resumed
    /// subscription's first), not an increment.
    resync: HashSet<ItemId>,
}

fn publish(topic: &'static str, session: &ThreadId, payload: Value) -> Out {
    Out::Publish {
        topic,
        session: session.0.clone(),
        payload,
    }
}

impl TopicMapper {
    /// What `notification` publishes.
    pub(crate) fn map(&mut self, notification: &Notification) -> Vec<Out> {
        match notification {
            Notification::Event(event) => self.event(event),
            Notification::Delta(delta) => match &delta.kind {
                DeltaKind::AgentText(text) => {
                    let streamed = self.streamed.entry(delta.item_id.clone()).or_default();
                    let token = if self.resync.remove(&delta.item_id) {
                        let rest = text.get(*streamed..).unwrap_or_default();
                        *streamed = text.len().max(*streamed);
                        rest
                    } else {
                        *streamed += text.len();
                        text.as_str()
                    };
                    token_out(&delta.thread_id, token).into_iter().collect()
                }
                _ => Vec::new(),
            },
            Notification::Lagged { .. } => Vec::new(),
        }
    }

    /// The subscription was picked up after a lag: each agent message in
    /// progress comes again as its whole text so far.
    pub(crate) fn resync_open_items(&mut self) {
        self.resync.extend(self.streamed.keys().cloned());
    }

    fn event(&mut self, event: &Event) -> Vec<Out> {
        let id = &event.thread_id;
        let mut out = Vec::new();
        match &event.payload {
            EventPayload::ThreadCreated { .. } | EventPayload::ThreadUnarchived => {
                out.push(Out::Updated(id.0.clone()));
            }
            EventPayload::ThreadConfigured { .. } => out.push(Out::Updated(id.0.clone())),
            EventPayload::ThreadArchived => {
                self.threads.remove(id);
                out.push(Out::Deleted(id.0.clone()));
            }
            EventPayload::TurnStarted { .. } => {
                out.push(publish(topic::LLM_START, id, json!({ "session_id": id.0 })));
            }
            EventPayload::ItemStarted { item } => self.item_seen(id, item, &mut out),
            EventPayload::ItemCompleted { item } => {
                self.item_seen(id, item, &mut out);
                self.item_completed(id, item, &mut out);
            }
            EventPayload::TurnCompleted { usage, .. } => {
                let state = self.threads.remove(id).unwrap_or_default();
                if let Some(round) = state.round {
                    flush(id, round, &mut out);
                }
                out.push(publish(
                    topic::LLM_END,
                    id,
                    json!({
                        "session_id": id.0,
                        "tokens_in": usage.input_tokens,
                        "tokens_out": usage.output_tokens,
                    }),
                ));
                out.push(Out::Updated(id.0.clone()));
            }
            _ => {}
        }
        out
    }

    /// An item's first sighting: its round, and its tool call's start.
    fn item_seen(&mut self, id: &ThreadId, item: &Item, out: &mut Vec<Out>) {
        let state = self.threads.entry(id.clone()).or_default();
        if !state.seen.insert(item.id.0.clone()) {
            return;
        }
        // The projection's grouping: a user message ends the round; a
        // compaction is a message of its own; anything else joins its round.
        let key = (item.turn_id.clone(), item.round);
        let is_user = matches!(item.kind, ItemKind::UserMessage { .. });
        let new_round = state.round.as_ref().is_none_or(|r| r.key != key);
        if (new_round || is_user)
            && let Some(round) = state.round.take()
        {
            flush(id, round, out);
        }
        if is_user || matches!(item.kind, ItemKind::ContextCompaction { .. }) {
            return;
        }
        let round = state.round.get_or_insert_with(|| Round {
            key,
            first_id: item.id.0.clone(),
            parts: Vec::new(),
            texts: 0,
        });
        if let Some(call) = item.public_tool_call() {
            round.parts.push(Part::ToolUse {
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
            if state.tools.insert(call.call_id.clone()) {
                out.push(publish(
                    topic::TOOL_START,
                    id,
                    json!({
                        "session_id": id.0,
                        "tool_name": call.name,
                        "call_id": call.call_id,
                        "params": call.arguments,
                    }),
                ));
            }
        }
    }

    fn item_completed(&mut self, id: &ThreadId, item: &Item, out: &mut Vec<Out>) {
        let state = self.threads.entry(id.clone()).or_default();
        match &item.kind {
            ItemKind::UserMessage { text, .. } => out.push(publish(
                topic::MESSAGE_APPEND,
                id,
                json!({
                    "session_id": id.0,
                    "message_id": item.id.0,
                    "role": "user",
                    "content": text,
                }),
            )),
            ItemKind::AgentMessage { text } if item.public_tool_call().is_none() => {
                // What streamed past a lag unseen goes out as one last token.
                self.resync.remove(&item.id);
                let streamed = self.streamed.remove(&item.id).unwrap_or(0);
                out.extend(token_out(id, text.get(streamed..).unwrap_or_default()));
                if let Some(round) = &mut state.round {
                    round.parts.insert(round.texts, Part::Text(text.clone()));
                    round.texts += 1;
                }
            }
            _ => {}
        }
        if let Some(call) = item.public_tool_call()
            && state.tools.remove(&call.call_id)
        {
            let result = call.output.clone().unwrap_or_else(|| match &item.kind {
                ItemKind::CommandExecution { output, .. } => output.clone(),
                _ => String::new(),
            });
            out.push(publish(
                topic::TOOL_END,
                id,
                json!({
                    "session_id": id.0,
                    "tool_name": call.name,
                    "call_id": call.call_id,
                    "is_error": tool_outcome(item).is_failure(),
                    "result": clip(&result),
                }),
            ));
        }
    }
}

/// `llm.token` of `token`, unless empty.
fn token_out(id: &ThreadId, token: &str) -> Option<Out> {
    (!token.is_empty()).then(|| {
        publish(
            topic::LLM_TOKEN,
            id,
            json!({ "session_id": id.0, "token": token }),
        )
    })
}

/// A round's assistant message, if it said or called anything.
fn flush(id: &ThreadId, round: Round, out: &mut Vec<Out>) {
    if round.parts.is_empty() {
        return;
    }
    out.push(publish(
        topic::MESSAGE_APPEND,
        id,
        json!({
            "session_id": id.0,
            "message_id": round.first_id,
            "role": "assistant",
            "content": content_of(&round.parts),
        }),
    ));
}

/// `text` cut to [`RESULT_LIMIT`] bytes (on a character boundary) + `...`.
pub(crate) fn clip(text: &str) -> String {
    if text.len() <= RESULT_LIMIT {
        return text.to_owned();
    }
    let mut end = RESULT_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[cfg(test)]
#[path = "topics/tests.rs"]
mod tests;

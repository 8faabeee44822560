//! One turn's engine notifications as Rome's content messages: text deltas
//! then the whole text, reasoning as `thinking`, every tool call as a
//! `tool_use` and its `tool_result` (paired by the model's call id), an
//! accepted structured payload, and at the turn's end its `result` or
//! `error` with the engine's usage. Turn bracketing (`turn_start`,
//! `session_init`, `turn_end`) is the stream's, not this mapper's.

use std::collections::HashSet;

use gantry_core::Notification;
use gantry_types::{
    DeltaKind, EventPayload, Item, ItemId, ItemKind, ItemStatus, TurnId, TurnStatus, Usage,
};
use serde_json::Value;

use crate::wire::{Accounting, EndStatus, Message, TokenUsage};

/// How the turn ended, once it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ended {
    /// What `turn_end` says.
    pub status: EndStatus,
}

/// Follows one turn.
pub(crate) struct TurnMapper {
    turn: TurnId,
    /// The model id of the turn (the thread's until the turn says).
    model: String,
    /// Tool calls announced with a `tool_use`.
    announced: HashSet<ItemId>,
    /// The last text block: the answer when the turn completes.
    last_text: Option<String>,
    /// The last error item's message.
    last_error: Option<String>,
    /// The accepted structured payload.
    structured: Option<Value>,
    /// The provider that serves a model, by the model id: accounting names
    /// it even when the id names none.
    provider_of: ProviderOf,
}

/// The name of the provider that serves a model id, if any does.
pub(crate) type ProviderOf = Box<dyn Fn(&str) -> Option<(String, String)> + Send>;

impl TurnMapper {
    /// Follows `turn`, run with `model` (a `PROVIDER/MODEL` id).
    pub(crate) fn new(turn: TurnId, model: String) -> Self {
        Self {
            turn,
            model,
            announced: HashSet::new(),
            last_text: None,
            last_error: None,
            structured: None,
            provider_of: Box::new(|_| None),
        }
    }

    /// Resolves the provider of the turn's model with `provider_of` (the
    /// provider's name and the id it is asked for).
    pub(crate) fn with_provider_of(mut self, provider_of: ProviderOf) -> Self {
        self.provider_of = provider_of;
        self
    }

    /// The messages `n` adds, and whether the turn ended with it.
    pub(crate) fn on(&mut self, n: &Notification) -> (Vec<Message>, Option<Ended>) {
        match n {
            Notification::Delta(d) if d.turn_id == self.turn => match &d.kind {
                DeltaKind::AgentText(text) if !text.is_empty() => (
                    vec![Message::TextDelta {
                        content: text.clone(),
                    }],
                    None,
                ),
                _ => (Vec::new(), None),
            },
            Notification::Event(e) => self.on_event(&e.payload),
            _ => (Vec::new(), None),
        }
    }

    fn on_event(&mut self, payload: &EventPayload) -> (Vec<Message>, Option<Ended>) {
        match payload {
            EventPayload::TurnStarted { turn } if turn.id == self.turn => {
                if let Some(model) = &turn.model {
                    self.model.clone_from(model);
                }
                (Vec::new(), None)
            }
            EventPayload::ItemStarted { item } if item.turn_id == self.turn => {
                (self.announce(item).into_iter().collect(), None)
            }
            EventPayload::ItemCompleted { item } if item.turn_id == self.turn => {
                (self.completed(item), None)
            }
            EventPayload::TurnCompleted {
                turn_id,
                status,
                rounds,
                usage,
                cost_usd,
                error,
                ..
            } if turn_id == &self.turn => {
                let accounting = self.accounting(usage, *cost_usd, *rounds);
                let (message, status) = match status {
                    TurnStatus::Completed | TurnStatus::Running => {
                        (Some(self.result(accounting)), EndStatus::Completed)
                    }
                    // A stopped turn ends with no result.
                    TurnStatus::Interrupted => (None, EndStatus::Interrupted),
                    TurnStatus::Failed => {
                        let error = error
                            .clone()
                            .or_else(|| self.last_error.clone())
                            .unwrap_or_else(|| "the turn failed".to_owned());
                        (Some(Message::Error { error, accounting }), EndStatus::Error)
                    }
                };
                (message.into_iter().collect(), Some(Ended { status }))
            }
            _ => (Vec::new(), None),
        }
    }

    fn result(&self, accounting: Accounting) -> Message {
        match &self.structured {
            Some(payload) => Message::Result {
                content: payload.to_string(),
                structured_output: Some(payload.clone()),
                accounting,
            },
            None => Message::Result {
                content: self.last_text.clone().unwrap_or_default(),
                structured_output: None,
                accounting,
            },
        }
    }

    fn completed(&mut self, item: &Item) -> Vec<Message> {
        let mut out = Vec::new();
        match &item.kind {
            ItemKind::AgentMessage { text } if !text.is_empty() => {
                self.last_text = Some(text.clone());
                out.push(Message::Text {
                    content: text.clone(),
                });
            }
            ItemKind::Reasoning { text, .. } if !text.is_empty() => {
                out.push(Message::Thinking {
                    content: text.clone(),
                });
            }
            ItemKind::Error { message } => self.last_error = Some(message.clone()),
            _ => {}
        }
        if item.public_tool_call().is_some() {
            out.extend(self.announce(item));
            out.extend(tool_result(item));
        }
        if let ItemKind::StructuredOutput { payload, .. } = &item.kind
            && item.status == ItemStatus::Completed
        {
            self.structured = Some(payload.clone());
            out.push(Message::StructuredOutput {
                payload: payload.clone(),
            });
        }
        out
    }

    /// The `tool_use` of a tool call not yet announced.
    fn announce(&mut self, item: &Item) -> Option<Message> {
        let call = item.public_tool_call()?;
        if !self.announced.insert(item.id.clone()) {
            return None;
        }
        let input = serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
        Some(Message::ToolUse {
            id: call.call_id.clone(),
            tool: call.name.clone(),
            input,
            started_at: rfc3339(item.started_at),
        })
    }

    fn accounting(&self, usage: &Usage, cost_usd: f64, rounds: u32) -> Accounting {
        let routed = (self.provider_of)(&self.model);
        let (provider, model) = match (routed, self.model.split_once('/')) {
            (Some(route), _) => route,
            (None, Some((provider, model))) => (provider.to_owned(), model.to_owned()),
            (None, None) => ("gantry".to_owned(), self.model.clone()),
        };
        Accounting {
            provider,
            model,
            usage: TokenUsage::from(usage),
            cost_usd,
            num_turns: rounds,
        }
    }
}

/// The result of a finished tool call: what the model was told.
fn tool_result(item: &Item) -> Option<Message> {
    let call = item.public_tool_call()?;
    let told = call.output.clone().or_else(|| match &item.kind {
        ItemKind::CommandExecution { output, .. } => Some(output.clone()),
        ItemKind::ToolCall { result, error, .. } => error.clone().or_else(|| result.clone()),
        ItemKind::ExternalTask { result, error, .. } => error.clone().or_else(|| result.clone()),
        ItemKind::FileChange { diff, .. } => Some(diff.clone()),
        _ => None,
    });
    Some(Message::ToolResult {
        tool_use_id: call.call_id.clone(),
        tool: call.name.clone(),
        output: told.map_or(Value::Null, Value::String),
        ended_at: rfc3339(item.completed_at.unwrap_or(item.started_at)),
    })
}

/// Unix milliseconds as RFC 3339 (UTC, milliseconds).
pub(crate) fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_types::{ToolCallOrigin, Turn};

    fn item(turn: &TurnId, kind: ItemKind, call: Option<ToolCallOrigin>) -> Item {
        Item {
            id: ItemId::new(),
            turn_id: turn.clone(),
            round: 1,
            status: ItemStatus::Completed,
            started_at: 1_700_000_000_000,
            completed_at: Some(1_700_000_000_500),
            kind,
            tool_call: call,
        }
    }

    fn event(payload: EventPayload) -> Notification {
        Notification::Event(std::sync::Arc::new(gantry_types::Event {
            thread_id: "t".into(),
            seq: 1,
            ts: 0,
            turn_id: None,
            item_id: None,
            payload,
            cursor: 1,
        }))
    }

    #[test]
    fn a_tool_call_is_announced_once_and_paired_with_its_result() {
        let turn = TurnId::new();
        let mut m = TurnMapper::new(turn.clone(), "mock/m".into());
        let call = ToolCallOrigin {
            call_id: "call_1".into(),
            name: "shell".into(),
            arguments: r#"{"command":"echo hi"}"#.into(),
            output: Some("hi\n".into()),
            refused: None,
            internal: false,
        };
        let mut started = item(
            &turn,
            ItemKind::CommandExecution {
                command: "echo hi".into(),
                cwd: "/".into(),
                process_id: None,
                output: String::new(),
                exit_code: None,
                duration_ms: None,
            },
            Some(call),
        );
        started.status = ItemStatus::InProgress;
        let (first, _) = m.on(&event(EventPayload::ItemStarted {
            item: started.clone(),
        }));
        let mut done = started;
        done.status = ItemStatus::Completed;
        let (second, _) = m.on(&event(EventPayload::ItemCompleted { item: done }));
        assert!(matches!(&first[..], [Message::ToolUse { id, input, .. }]
            if id == "call_1" && input["command"] == "echo hi"));
        assert!(
            matches!(&second[..], [Message::ToolResult { tool_use_id, output, .. }]
            if tool_use_id == "call_1" && output == "hi\n")
        );
    }

    #[test]
    fn a_completed_turn_answers_with_its_last_text_and_real_usage() {
        let turn = TurnId::new();
        let mut m = TurnMapper::new(turn.clone(), "x/y".into());
        let mut started = Turn::started(turn.clone(), "t".into(), "hi".into(), None, 0);
        started.model = Some("mock/gpt".into());
        m.on(&event(EventPayload::TurnStarted { turn: started }));
        let (text, _) = m.on(&event(EventPayload::ItemCompleted {
            item: item(
                &turn,
                ItemKind::AgentMessage {
                    text: "done".into(),
                },
                None,
            ),
        }));
        assert_eq!(
            text,
            [Message::Text {
                content: "done".into()
            }]
        );
        let usage = Usage {
            input_tokens: 100,
            output_tokens: 7,
            cached_input_tokens: 30,
            cache_write_tokens: 10,
            reasoning_tokens: 0,
        };
        let (end, ended) = m.on(&event(EventPayload::TurnCompleted {
            turn_id: turn,
            status: TurnStatus::Completed,
            rounds: 2,
            usage,
            cost_usd: 0.5,
            error: None,
            failure: None,
        }));
        assert_eq!(ended.map(|e| e.status), Some(EndStatus::Completed));
        let [
            Message::Result {
                content,
                accounting,
                ..
            },
        ] = &end[..]
        else {
            panic!("{end:?}");
        };
        assert_eq!(content, "done");
        assert_eq!((&*accounting.provider, &*accounting.model), ("mock", "gpt"));
        assert_eq!(
            accounting.usage,
            TokenUsage {
                input_tokens: 60,
                output_tokens: 7,
                cache_read_tokens: 30,
                cache_write_tokens: 10
            }
        );
    }

    #[test]
    fn an_interrupted_turn_has_no_result_and_other_turns_are_ignored() {
        let turn = TurnId::new();
        let mut m = TurnMapper::new(turn.clone(), "m".into());
        let other = TurnId::new();
        let (out, ended) = m.on(&event(EventPayload::ItemCompleted {
            item: item(&other, ItemKind::AgentMessage { text: "x".into() }, None),
        }));
        assert!(out.is_empty() && ended.is_none());
        let (out, ended) = m.on(&event(EventPayload::TurnCompleted {
            turn_id: turn,
            status: TurnStatus::Interrupted,
            rounds: 1,
            usage: Usage::default(),
            cost_usd: 0.0,
            error: Some("interrupted".into()),
            failure: None,
        }));
        assert!(out.is_empty());
        assert_eq!(ended.map(|e| e.status), Some(EndStatus::Interrupted));
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }
}

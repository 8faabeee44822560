//! Rebuilds the conversation the model saw from a thread's items.

use gantry_llm::{Message, ReasoningBlock, ToolCall};
use gantry_types::{ItemKind, ItemStatus, ThreadView};

/// Said to the model for a call whose result never came (interrupt, crash).
const NO_RESULT: &str = "error: the call was interrupted before it returned a result";

/// The conversation of every turn of `view`, in order: user messages, each
/// model round as one assistant message (text and tool calls), and the tool
/// results after it. Every tool call gets a result, as providers require.
pub(crate) fn history(view: &ThreadView) -> Vec<Message> {
    let mut out = Vec::new();
    let mut round: Option<Round> = None;
    for item in view.turns.iter().flat_map(|t| t.items.iter()) {
        let key = (&item.turn_id, item.round);
        let other_round = round
            .as_ref()
            .is_some_and(|r| (&r.turn, r.round) != (key.0, key.1));
        let is_user = matches!(item.kind, ItemKind::UserMessage { .. });
        if (other_round || is_user)
            && let Some(r) = round.take()
        {
            r.flush(&mut out);
        }
        if let ItemKind::ContextCompaction {
            summary,
            kept_user_messages,
            ..
        } = &item.kind
        {
            // Everything before a compaction is replaced by its result.
            if item.status == ItemStatus::Completed {
                round = None;
                out = super::compacted_history(summary, kept_user_messages);
            }
            continue;
        }
        if let ItemKind::UserMessage { text, images, .. } = &item.kind {
            out.push(Message::User {
                text: text.clone(),
                images: images.clone(),
            });
            continue;
        }
        let r = round.get_or_insert_with(|| Round {
            turn: key.0.clone(),
            round: key.1,
            reasoning: Vec::new(),
            text: String::new(),
            calls: Vec::new(),
            results: Vec::new(),
        });
        if let Some(origin) = &item.tool_call {
            r.calls.push(ToolCall {
                id: origin.call_id.clone(),
                name: origin.name.clone(),
                arguments: origin.arguments.clone(),
            });
            r.results.push(Message::ToolResult {
                call_id: origin.call_id.clone(),
                output: origin
                    .output
                    .clone()
                    .unwrap_or_else(|| NO_RESULT.to_owned()),
            });
        } else {
            match &item.kind {
                ItemKind::AgentMessage { text } => r.text.push_str(text),
                ItemKind::Reasoning {
                    text,
                    signature,
                    opaque,
                } => r.reasoning.push(ReasoningBlock {
                    text: text.clone(),
                    signature: signature.clone(),
                    opaque: opaque.clone(),
                }),
                _ => {}
            }
        }
    }
    if let Some(r) = round {
        r.flush(&mut out);
    }
    out
}

struct Round {
    turn: gantry_types::TurnId,
    round: u32,
    reasoning: Vec<ReasoningBlock>,
    text: String,
    calls: Vec<ToolCall>,
    results: Vec<Message>,
}

impl Round {
    fn flush(self, out: &mut Vec<Message>) {
        if self.text.is_empty() && self.calls.is_empty() && self.reasoning.is_empty() {
            return;
        }
        out.push(Message::Assistant {
            reasoning: self.reasoning,
            text: self.text,
            tool_calls: self.calls,
        });
        out.extend(self.results);
    }
}

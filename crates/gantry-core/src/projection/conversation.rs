//! A thread's items as a conversation: user messages; each model round as
//! one assistant message (its text, then its tool calls); the round's tool
//! results as one message after it; a compaction as its summary. The shape
//! every chat-style protocol (A3S, ACP, CodeWhale, ...) starts from.

use gantry_types::{Item, ItemId, ItemKind, ItemStatus, ThreadView, TurnId};

use super::{ToolOutcome, tool_outcome};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The item it starts with (a round's results share the round's first
    /// item: protocols that need distinct ids derive one from the role).
    pub item_id: ItemId,
    /// The turn it belongs to.
    pub turn_id: TurnId,
    /// Who speaks.
    pub role: Role,
    /// When its first item started (unix ms).
    pub at: i64,
    /// What it says, in order.
    pub parts: Vec<Part>,
}

/// Who speaks a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The user (or a client speaking for them).
    User,
    /// The model: text, then tool calls.
    Assistant,
    /// The results of one model round's tool calls.
    ToolResults,
    /// The summary that replaced everything before it.
    CompactionSummary {
        /// What triggered the compaction (`auto`, `manual`, ...).
        trigger: String,
    },
}

/// A part of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text.
    Text(String),
    /// A tool call the model made.
    ToolUse {
        /// The provider's id of the call.
        call_id: String,
        /// The tool's name as the model used it.
        name: String,
        /// The arguments as the model sent them (possibly invalid JSON).
        arguments: String,
    },
    /// What a tool call returned to the model.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// What the model was told.
        output: String,
        /// How the call ended.
        outcome: ToolOutcome,
    },
}

/// The conversation of `view`, oldest first.
pub fn conversation(view: &ThreadView) -> Vec<Message> {
    let mut out = Vec::new();
    let mut round: Option<Round> = None;
    for item in view.turns.iter().flat_map(|t| &t.items) {
        let key = (&item.turn_id, item.round);
        let new_round = round.as_ref().is_none_or(|r| (&r.turn, r.round) != key);
        let is_user = matches!(item.kind, ItemKind::UserMessage { .. });
        if (new_round || is_user)
            && let Some(r) = round.take()
        {
            r.flush(&mut out);
        }
        match &item.kind {
            ItemKind::UserMessage { text, .. } => {
                out.push(message(item, Role::User, vec![Part::Text(text.clone())]));
                continue;
            }
            ItemKind::ContextCompaction {
                summary, trigger, ..
            } if item.status == ItemStatus::Completed => {
                let role = Role::CompactionSummary {
                    trigger: trigger.clone(),
                };
                out.push(message(item, role, vec![Part::Text(summary.clone())]));
                continue;
            }
            _ => {}
        }
        let r = round.get_or_insert_with(|| Round::new(item));
        if let Some(origin) = &item.tool_call {
            r.assistant.push(Part::ToolUse {
                call_id: origin.call_id.clone(),
                name: origin.name.clone(),
                arguments: origin.arguments.clone(),
            });
            if let Some(output) = &origin.output {
                r.results.push(Part::ToolResult {
                    call_id: origin.call_id.clone(),
                    output: output.clone(),
                    outcome: tool_outcome(item),
                });
            }
        } else if let ItemKind::AgentMessage { text } = &item.kind {
            // A round's texts come before its tool calls, as the model
            // wrote them.
            r.assistant.insert(r.texts, Part::Text(text.clone()));
            r.texts += 1;
        }
    }
    if let Some(r) = round {
        r.flush(&mut out);
    }
    out
}

/// One model round being gathered.
struct Round {
    turn: TurnId,
    round: u32,
    first_id: ItemId,
    at: i64,
    /// Text parts first (`texts` of them), then tool uses.
    assistant: Vec<Part>,
    texts: usize,
    results: Vec<Part>,
}

impl Round {
    fn new(first: &Item) -> Self {
        Self {
            turn: first.turn_id.clone(),
            round: first.round,
            first_id: first.id.clone(),
            at: first.started_at,
            assistant: Vec::new(),
            texts: 0,
            results: Vec::new(),
        }
    }

    fn flush(self, out: &mut Vec<Message>) {
        let message = |role, parts| Message {
            item_id: self.first_id.clone(),
            turn_id: self.turn.clone(),
            role,
            at: self.at,
            parts,
        };
        if !self.assistant.is_empty() {
            out.push(message(Role::Assistant, self.assistant));
        }
        if !self.results.is_empty() {
            out.push(message(Role::ToolResults, self.results));
        }
    }
}

fn message(item: &Item, role: Role, parts: Vec<Part>) -> Message {
    Message {
        item_id: item.id.clone(),
        turn_id: item.turn_id.clone(),
        role,
        at: item.started_at,
        parts,
    }
}

//! A thread's items as the seed's `ConversationMessage`s: user messages;
//! each model round as one assistant message (its text, then its tool
//! calls as `tool_use` blocks); the round's tool results as one `user`
//! message of `tool_result` blocks (the Anthropic shape A3S uses); a
//! compaction as a `system` message carrying the summary.

use std::collections::HashMap;

use gantry_types::{Item, ItemKind, ItemStatus, ThreadView, TurnId};

use crate::pb;
use crate::pb::content_block::Block;

/// The conversation of `view`, oldest first.
pub(crate) fn messages(view: &ThreadView) -> Vec<pb::ConversationMessage> {
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
                out.push(message(item, "user", vec![text_block(text)]));
                continue;
            }
            ItemKind::ContextCompaction {
                summary, trigger, ..
            } if item.status == ItemStatus::Completed => {
                let mut m = message(item, "system", vec![text_block(summary)]);
                m.metadata
                    .insert("kind".to_owned(), "context_compaction".to_owned());
                m.metadata.insert("trigger".to_owned(), trigger.clone());
                out.push(m);
                continue;
            }
            _ => {}
        }
        let r = round.get_or_insert_with(|| Round::new(item));
        if let Some(origin) = &item.tool_call {
            r.assistant.push(Block::ToolUse(pb::ToolUseContent {
                id: origin.call_id.clone(),
                name: origin.name.clone(),
                arguments: origin.arguments.clone(),
            }));
            if let Some(output) = &origin.output {
                r.results.push(Block::ToolResult(pb::ToolResultContent {
                    tool_use_id: origin.call_id.clone(),
                    content: output.clone(),
                    is_error: tool_failed(item),
                }));
            }
        } else if let ItemKind::AgentMessage { text } = &item.kind {
            r.assistant.insert(r.texts, text_block_of(text));
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
    first: Item,
    /// Text blocks first (`texts` of them), then tool uses.
    assistant: Vec<Block>,
    texts: usize,
    results: Vec<Block>,
}

impl Round {
    fn new(first: &Item) -> Self {
        Self {
            turn: first.turn_id.clone(),
            round: first.round,
            first: first.clone(),
            assistant: Vec::new(),
            texts: 0,
            results: Vec::new(),
        }
    }

    fn flush(self, out: &mut Vec<pb::ConversationMessage>) {
        if !self.assistant.is_empty() {
            out.push(message(&self.first, "assistant", blocks(self.assistant)));
        }
        if !self.results.is_empty() {
            let mut m = message(&self.first, "user", blocks(self.results));
            m.id = format!("{}:results", self.first.id);
            out.push(m);
        }
    }
}

fn message(item: &Item, role: &str, content: Vec<pb::ContentBlock>) -> pb::ConversationMessage {
    pb::ConversationMessage {
        id: item.id.to_string(),
        role: role.to_owned(),
        content,
        timestamp: item.started_at,
        metadata: HashMap::from([("turn_id".to_owned(), item.turn_id.to_string())]),
    }
}

fn blocks(blocks: Vec<Block>) -> Vec<pb::ContentBlock> {
    blocks
        .into_iter()
        .map(|b| pb::ContentBlock { block: Some(b) })
        .collect()
}

fn text_block_of(text: &str) -> Block {
    Block::Text(pb::TextContent {
        text: text.to_owned(),
    })
}

fn text_block(text: &str) -> pb::ContentBlock {
    pb::ContentBlock {
        block: Some(text_block_of(text)),
    }
}

/// Whether a tool item failed: it ended in error, or completed reporting
/// failure (a non-zero exit, an error result).
pub(crate) fn tool_failed(item: &Item) -> bool {
    if matches!(item.status, ItemStatus::Failed | ItemStatus::Interrupted) {
        return true;
    }
    match &item.kind {
        ItemKind::CommandExecution { exit_code, .. } => exit_code.is_none_or(|c| c != 0),
        ItemKind::ToolCall { error, .. } | ItemKind::ExternalTask { error, .. } => error.is_some(),
        _ => false,
    }
}

//! The engine's conversation projection as the seed's
//! `ConversationMessage`s: a round's tool results become one `user`
//! message of `tool_result` blocks (the Anthropic shape A3S uses), a
//! compaction a `system` message carrying the summary.

use std::collections::HashMap;

use gantry_core::projection::{self, Message, Part, Role};
use gantry_types::ThreadView;

use crate::names::wire;
use crate::pb;
use crate::pb::content_block::Block;

/// The conversation of `view`, oldest first.
pub(crate) fn messages(view: &ThreadView) -> Vec<pb::ConversationMessage> {
    projection::conversation(view)
        .into_iter()
        .map(message)
        .collect()
}

fn message(m: Message) -> pb::ConversationMessage {
    let mut metadata = HashMap::from([("turn_id".to_owned(), m.turn_id.to_string())]);
    let (id, role) = match &m.role {
        Role::User => (m.item_id.to_string(), "user"),
        Role::Assistant => (m.item_id.to_string(), "assistant"),
        // Results share their round's first item: a distinct id for them.
        Role::ToolResults => (format!("{}:results", m.item_id), "user"),
        Role::CompactionSummary { trigger } => {
            metadata.insert("kind".to_owned(), "context_compaction".to_owned());
            metadata.insert("trigger".to_owned(), trigger.clone());
            (m.item_id.to_string(), "system")
        }
    };
    pb::ConversationMessage {
        id,
        role: role.to_owned(),
        content: m.parts.into_iter().map(block).collect(),
        timestamp: m.at,
        metadata,
    }
}

fn block(part: Part) -> pb::ContentBlock {
    let block = match part {
        Part::Text(text) => Block::Text(pb::TextContent { text }),
        Part::ToolUse {
            call_id,
            name,
            arguments,
        } => Block::ToolUse(pb::ToolUseContent {
            id: call_id,
            name: wire(&name).to_owned(),
            arguments,
        }),
        Part::ToolResult {
            call_id,
            output,
            outcome,
        } => Block::ToolResult(pb::ToolResultContent {
            tool_use_id: call_id,
            content: output,
            is_error: outcome.is_failure(),
        }),
    };
    pb::ContentBlock { block: Some(block) }
}

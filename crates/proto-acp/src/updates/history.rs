//! A stored thread as the updates `session/load` streams before it
//! answers: each user message, answer and reasoning as one chunk, each
//! tool call as its `tool_call` and final `tool_call_update`, the task
//! list as the plan.

use gantry_types::{ItemKind, ThreadView};

use super::{Terminals, UpdateMapper};
use crate::wire::{ContentBlock, SessionUpdate};

/// The updates that replay `view`.
pub(crate) fn replay(view: &ThreadView) -> Vec<SessionUpdate> {
    let mut mapper = UpdateMapper::new(view.thread.cwd.clone(), Terminals::default());
    let mut out = Vec::new();
    for item in view.turns.iter().flat_map(|t| &t.items) {
        let chunk = |text: &str| ContentBlock::text(text);
        match &item.kind {
            ItemKind::UserMessage { text, images, .. } => {
                if !text.is_empty() {
                    out.push(SessionUpdate::UserMessageChunk {
                        content: chunk(text),
                    });
                }
                out.extend(images.iter().map(|i| SessionUpdate::UserMessageChunk {
                    content: ContentBlock::Image {
                        data: i.data.clone(),
                        mime_type: i.media_type.clone(),
                        uri: None,
                    },
                }));
            }
            ItemKind::AgentMessage { text } if !text.is_empty() => {
                out.push(SessionUpdate::AgentMessageChunk {
                    content: chunk(text),
                })
            }
            ItemKind::Reasoning { text, .. } if !text.is_empty() => {
                out.push(SessionUpdate::AgentThoughtChunk {
                    content: chunk(text),
                })
            }
            // Approvals show as their call's status; the rest is internal.
            _ => {}
        }
        if item.public_tool_call().is_some() {
            out.extend(mapper.item_completed(item));
        }
    }
    out
}

//! Live engine notifications to `session/update`s. Text and reasoning
//! stream as chunks; a tool call is announced when its item starts (or
//! when its approval is asked, as `pending`) and updated when it ends;
//! the task list becomes the plan. The mapper keeps what it streamed of
//! each item, so an item completed without (all of) its deltas still gives
//! the rest of its text.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use gantry_core::Notification;
use gantry_core::projection::tool_outcome;
use gantry_types::{
    ApprovalRequest, Delta, DeltaKind, Event, EventPayload, Item, ItemId, ItemKind, ItemStatus,
};
use serde_json::Value;

use super::{describe, diff_texts, plan_entries};
use crate::wire::{
    ContentBlock, SessionUpdate, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate,
};

/// Terminals the client runs, by the tool call they run for.
pub(crate) type Terminals = Arc<Mutex<HashMap<String, String>>>;

/// The id a tool call has on the wire: the model's call id, else the item's.
pub(crate) fn call_id_of(item: &Item) -> String {
    item.tool_call
        .as_ref()
        .map_or_else(|| item.id.0.clone(), |o| o.call_id.clone())
}

/// Maps one session's notifications.
pub(crate) struct UpdateMapper {
    cwd: String,
    /// Tool calls sent as `tool_call` already.
    announced: HashSet<String>,
    /// Bytes of each item's text streamed so far.
    streamed: HashMap<ItemId, usize>,
    /// Items whose next delta is their whole text so far (after a lag).
    resync: HashSet<ItemId>,
    terminals: Terminals,
}

impl UpdateMapper {
    /// A mapper for a session in `cwd`.
    pub(crate) fn new(cwd: impl Into<String>, terminals: Terminals) -> Self {
        Self {
            cwd: cwd.into(),
            announced: HashSet::new(),
            streamed: HashMap::new(),
            resync: HashSet::new(),
            terminals,
        }
    }

    /// The subscription was picked up again: every item's next delta is
    /// its text so far.
    pub(crate) fn resync(&mut self) {
        self.resync.extend(self.streamed.keys().cloned());
    }

    /// The updates of one notification.
    pub(crate) fn map(&mut self, notification: &Notification) -> Vec<SessionUpdate> {
        match notification {
            Notification::Event(event) => self.event(event),
            Notification::Delta(delta) => self.delta(delta).into_iter().collect(),
            Notification::Lagged { .. } => Vec::new(),
        }
    }

    fn delta(&mut self, delta: &Delta) -> Option<SessionUpdate> {
        let chunk: fn(ContentBlock) -> SessionUpdate = match &delta.kind {
            DeltaKind::AgentText(_) => |content| SessionUpdate::AgentMessageChunk { content },
            DeltaKind::Reasoning(_) => |content| SessionUpdate::AgentThoughtChunk { content },
            _ => return None,
        };
        let text = delta.kind.text();
        let streamed = self.streamed.entry(delta.item_id.clone()).or_default();
        let new = if self.resync.remove(&delta.item_id) {
            let rest = text.get(*streamed..).unwrap_or_default();
            *streamed = text.len().max(*streamed);
            rest
        } else {
            *streamed += text.len();
            text
        };
        (!new.is_empty()).then(|| chunk(ContentBlock::text(new)))
    }

    fn event(&mut self, event: &Event) -> Vec<SessionUpdate> {
        match &event.payload {
            EventPayload::ItemStarted { item } => self.started(item).into_iter().collect(),
            EventPayload::ItemCompleted { item } => self.item_completed(item),
            _ => Vec::new(),
        }
    }

    /// The updates of a completed item: its `tool_call` if it was never
    /// announced, then what it ended with.
    pub(crate) fn item_completed(&mut self, item: &Item) -> Vec<SessionUpdate> {
        let mut out: Vec<SessionUpdate> = self.started(item).into_iter().collect();
        out.extend(self.completed(item));
        out
    }

    /// A tool call's `tool_call`, once.
    fn started(&mut self, item: &Item) -> Option<SessionUpdate> {
        let origin = item.public_tool_call()?;
        let id = call_id_of(item);
        let args: Value = serde_json::from_str(&origin.arguments)
            .unwrap_or_else(|_| Value::String(origin.arguments.clone()));
        if !self.announced.insert(id.clone()) {
            // Announced as pending while its approval was asked: it runs now.
            return (item.status == ItemStatus::InProgress).then(|| {
                SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                    tool_call_id: id,
                    status: Some(ToolCallStatus::InProgress),
                    ..ToolCallUpdate::default()
                })
            });
        }
        let d = describe(&origin.name, &args, &self.cwd);
        Some(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: id,
            title: d.title,
            kind: d.kind,
            status: ToolCallStatus::InProgress,
            content: Vec::new(),
            locations: d.locations,
            raw_input: Some(args),
            raw_output: None,
        }))
    }

    /// A `tool_call` in `pending` for a call whose approval is asked (none
    /// if it was announced), and the call as the permission request shows it.
    pub(crate) fn asked(
        &mut self,
        request: &ApprovalRequest,
    ) -> (Option<SessionUpdate>, ToolCallUpdate) {
        let d = describe(&request.tool, &request.arguments, &self.cwd);
        let id = request.call_id.clone();
        let update = ToolCallUpdate {
            tool_call_id: id.clone(),
            title: Some(d.title.clone()),
            kind: Some(d.kind),
            status: Some(ToolCallStatus::Pending),
            locations: Some(d.locations.clone()),
            raw_input: Some(request.arguments.clone()),
            ..ToolCallUpdate::default()
        };
        let announce = self.announced.insert(id.clone()).then(|| {
            SessionUpdate::ToolCall(ToolCall {
                tool_call_id: id,
                title: d.title,
                kind: d.kind,
                status: ToolCallStatus::Pending,
                content: Vec::new(),
                locations: d.locations,
                raw_input: Some(request.arguments.clone()),
                raw_output: None,
            })
        });
        (announce, update)
    }

    fn completed(&mut self, item: &Item) -> Vec<SessionUpdate> {
        self.resync.remove(&item.id);
        let streamed = self.streamed.remove(&item.id).unwrap_or(0);
        let rest = |text: &str| text.get(streamed..).unwrap_or_default().to_owned();
        let mut out = Vec::new();
        match &item.kind {
            ItemKind::AgentMessage { text } => {
                let rest = rest(text);
                if !rest.is_empty() {
                    out.push(SessionUpdate::AgentMessageChunk {
                        content: ContentBlock::text(rest),
                    });
                }
            }
            ItemKind::Reasoning { text, .. } => {
                let rest = rest(text);
                if !rest.is_empty() {
                    out.push(SessionUpdate::AgentThoughtChunk {
                        content: ContentBlock::text(rest),
                    });
                }
            }
            ItemKind::TodoList { todos } => out.push(SessionUpdate::Plan {
                entries: plan_entries(todos),
            }),
            _ => {}
        }
        if item.public_tool_call().is_some() {
            out.push(SessionUpdate::ToolCallUpdate(self.finished(item)));
        }
        out
    }

    /// The final update of a tool call's item.
    pub(crate) fn finished(&self, item: &Item) -> ToolCallUpdate {
        let id = call_id_of(item);
        let failed = item.status != ItemStatus::Completed || tool_outcome(item).is_failure();
        let output = item.public_tool_call().and_then(|o| o.output.clone());
        let text = |t: &str| ToolCallContent::Content {
            content: ContentBlock::text(t),
        };
        let terminal = self
            .terminals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned();
        let content = match (&item.kind, terminal) {
            (ItemKind::CommandExecution { .. }, Some(terminal_id)) => {
                vec![ToolCallContent::Terminal { terminal_id }]
            }
            (ItemKind::CommandExecution { output, .. }, None) if !output.is_empty() => {
                vec![text(output)]
            }
            (ItemKind::FileChange { path, diff }, _) => match diff_texts(diff) {
                Some((old_text, new_text)) => vec![ToolCallContent::Diff {
                    path: super::tools::absolute(&self.cwd, path),
                    old_text,
                    new_text,
                }],
                None => output.as_deref().map(text).into_iter().collect(),
            },
            _ => output.as_deref().map(text).into_iter().collect(),
        };
        ToolCallUpdate {
            tool_call_id: id,
            status: Some(if failed {
                ToolCallStatus::Failed
            } else {
                ToolCallStatus::Completed
            }),
            content: Some(content),
            raw_output: output.map(Value::String),
            ..ToolCallUpdate::default()
        }
    }
}

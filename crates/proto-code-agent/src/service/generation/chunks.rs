//! A running turn as a sequence of updates a client can follow: text as it
//! streams, tool calls as they start and end, notes (turn started, waiting
//! for approval or for an external task), and the end. Survives falling
//! behind the bus (the engine's feed resumes), and text it missed is sent
//! from the completed message.

use std::collections::HashMap;

use gantry_core::{Notification, ThreadFeed};
use gantry_types::{
    DeltaKind, EventPayload, Item, ItemId, ItemKind, TurnFailure, TurnId, TurnStatus, Usage,
};

use crate::names::wire;
use crate::pb;
use gantry_core::projection::tool_outcome;

/// What happened in the turn.
pub(super) enum Update {
    /// More of the agent's answer.
    Text(String),
    /// The model called a tool.
    ToolStarted(pb::ToolCall),
    /// A tool call ended (the call carries its result).
    ToolFinished(pb::ToolCall),
    /// Something a client may act on or show (`event` names it).
    Note(HashMap<String, String>),
    /// A new model round (1-based) began: what follows is its output.
    Round(u32),
    /// The turn ended.
    Ended {
        status: TurnStatus,
        usage: Usage,
        error: Option<String>,
        failure: Option<TurnFailure>,
    },
}

/// Follows one turn of a thread.
pub(super) struct TurnFeed {
    turn: TurnId,
    feed: ThreadFeed,
    /// Bytes of each agent message already sent as text.
    sent: HashMap<ItemId, usize>,
    /// The latest model round seen.
    round: u32,
    ended: bool,
}

impl TurnFeed {
    /// Follows `turn` on `feed` (subscribed before the turn started).
    pub(super) fn new(turn: TurnId, feed: ThreadFeed) -> Self {
        Self {
            turn,
            feed,
            sent: HashMap::new(),
            round: 0,
            ended: false,
        }
    }

    /// The turn followed.
    pub(super) fn turn(&self) -> &TurnId {
        &self.turn
    }

    /// The next updates (possibly several from one notification); empty
    /// once the turn ended.
    pub(super) async fn next(&mut self) -> Vec<Update> {
        while !self.ended {
            let n = match self.feed.next().await {
                Ok(Some(n)) => n,
                Ok(None) => {
                    self.ended = true;
                    return vec![Update::Ended {
                        status: TurnStatus::Interrupted,
                        usage: Usage::default(),
                        error: Some("the server is shutting down".to_owned()),
                        failure: None,
                    }];
                }
                Err(e) => {
                    self.ended = true;
                    return vec![Update::Ended {
                        status: TurnStatus::Failed,
                        usage: Usage::default(),
                        error: Some(e.to_string()),
                        failure: None,
                    }];
                }
            };
            let updates = match n {
                Notification::Delta(d) if d.turn_id == self.turn => match &d.kind {
                    DeltaKind::AgentText(text) => {
                        *self.sent.entry(d.item_id.clone()).or_default() += text.len();
                        vec![Update::Text(text.clone())]
                    }
                    _ => Vec::new(),
                },
                Notification::Delta(_) => Vec::new(),
                Notification::Event(e) => self.on_event(&e.payload),
                Notification::Lagged { .. } => Vec::new(),
            };
            if !updates.is_empty() {
                return updates;
            }
        }
        Vec::new()
    }

    fn on_event(&mut self, payload: &EventPayload) -> Vec<Update> {
        match payload {
            EventPayload::TurnStarted { turn } if turn.id == self.turn => {
                vec![Update::Note(note(
                    "turn_started",
                    [("turn_id", turn.id.to_string())],
                ))]
            }
            EventPayload::ItemStarted { item } if item.turn_id == self.turn => {
                let mut updates = Vec::new();
                if item.round > self.round {
                    self.round = item.round;
                    updates.push(Update::Round(item.round));
                }
                updates.extend(started(item));
                updates
            }
            EventPayload::ItemCompleted { item } if item.turn_id == self.turn => {
                self.completed(item)
            }
            EventPayload::TurnCompleted {
                turn_id,
                status,
                usage,
                error,
                failure,
                ..
            } if *turn_id == self.turn => {
                self.ended = true;
                vec![Update::Ended {
                    status: *status,
                    usage: *usage,
                    error: error.clone(),
                    failure: *failure,
                }]
            }
            _ => Vec::new(),
        }
    }

    fn completed(&mut self, item: &Item) -> Vec<Update> {
        let mut updates = Vec::new();
        if let ItemKind::AgentMessage { text } = &item.kind {
            // Text the feed missed (it fell behind): the rest of the message.
            let sent = self.sent.remove(&item.id).unwrap_or(0);
            if let Some(rest) = text.get(sent..).filter(|r| !r.is_empty()) {
                updates.push(Update::Text(rest.to_owned()));
            }
        }
        if let Some(call) = tool_call(item) {
            let mut call = call;
            call.result = Some(tool_result(item));
            updates.push(Update::ToolFinished(call));
        }
        match &item.kind {
            ItemKind::Approval {
                approval_id,
                decision: Some(decision),
                resolved_by,
                ..
            } => updates.push(Update::Note(note(
                "confirmation_received",
                [
                    ("tool_id", approval_id.clone()),
                    ("approved", decision.runs().to_string()),
                    (
                        "resolved_by",
                        resolved_by.map(|b| b.name()).unwrap_or_default().to_owned(),
                    ),
                ],
            ))),
            ItemKind::ExternalTask { task_id, error, .. } => updates.push(Update::Note(note(
                "external_task_completed",
                [
                    ("task_id", task_id.clone()),
                    ("success", error.is_none().to_string()),
                ],
            ))),
            _ => {}
        }
        updates
    }
}

/// Updates of an item that started: a tool call, or a wait for a client.
fn started(item: &Item) -> Vec<Update> {
    let mut updates: Vec<Update> = tool_call(item)
        .map(Update::ToolStarted)
        .into_iter()
        .collect();
    match &item.kind {
        ItemKind::Approval {
            approval_id,
            request,
            ..
        } => updates.push(Update::Note(note(
            "confirmation_required",
            [
                ("tool_id", approval_id.clone()),
                ("call_id", request.call_id.clone()),
                ("tool_name", wire(&request.tool).to_owned()),
                ("args", request.arguments.to_string()),
                ("reason", request.reason.clone()),
                ("timeout_ms", request.timeout_ms.to_string()),
            ],
        ))),
        ItemKind::ExternalTask {
            task_id,
            tool,
            payload,
            timeout_ms,
            ..
        } => updates.push(Update::Note(note(
            "external_task_pending",
            [
                ("task_id", task_id.clone()),
                ("command_type", wire(tool).to_owned()),
                ("payload", payload.to_string()),
                ("timeout_ms", timeout_ms.to_string()),
            ],
        ))),
        _ => {}
    }
    updates
}

/// The model's call behind a tool item, without its result.
pub(super) fn tool_call(item: &Item) -> Option<pb::ToolCall> {
    let origin = item.public_tool_call()?;
    Some(pb::ToolCall {
        id: origin.call_id.clone(),
        name: wire(&origin.name).to_owned(),
        arguments: origin.arguments.clone(),
        result: None,
    })
}

/// The result of an ended tool item.
pub(super) fn tool_result(item: &Item) -> pb::ToolResult {
    let told = item
        .public_tool_call()
        .and_then(|o| o.output.clone())
        .unwrap_or_default();
    let success = !tool_outcome(item).is_failure();
    let mut metadata = HashMap::from([("item_type".to_owned(), item.kind.name().to_owned())]);
    if let ItemKind::CommandExecution {
        exit_code: Some(code),
        ..
    } = &item.kind
    {
        metadata.insert("exit_code".to_owned(), code.to_string());
    }
    let error = match &item.kind {
        ItemKind::ToolCall {
            error: Some(error), ..
        }
        | ItemKind::ExternalTask {
            error: Some(error), ..
        } => error.clone(),
        _ if !success => told.clone(),
        _ => String::new(),
    };
    pb::ToolResult {
        success,
        output: told,
        error,
        metadata,
    }
}

fn note<const N: usize>(event: &str, fields: [(&str, String); N]) -> HashMap<String, String> {
    let mut map: HashMap<String, String> =
        fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    map.insert("event".to_owned(), event.to_owned());
    map
}

/// The token counts clients read from `metadata`.
pub(super) fn usage_metadata(usage: &Usage) -> HashMap<String, String> {
    HashMap::from([
        ("prompt_tokens".to_owned(), usage.input_tokens.to_string()),
        (
            "completion_tokens".to_owned(),
            usage.output_tokens.to_string(),
        ),
        (
            "total_tokens".to_owned(),
            (usage.input_tokens + usage.output_tokens).to_string(),
        ),
    ])
}

/// The proto's `Usage`.
pub(super) fn pb_usage(usage: &Usage) -> pb::Usage {
    use crate::views::u32_of;
    pb::Usage {
        prompt_tokens: u32_of(usage.input_tokens),
        completion_tokens: u32_of(usage.output_tokens),
        total_tokens: u32_of(usage.input_tokens + usage.output_tokens),
    }
}

//! Engine notifications to CodeWhale frames. One model round is one
//! response (`{turn_id}.{round}`): it starts at the round's first item and
//! ends when the next round starts or the turn ends; its text and
//! reasoning are deltas on its two channels, its tool calls start and end
//! inside it. The mapper keeps what it streamed of each item, so an item
//! completed without its deltas (a replay from the log, a resumed stream)
//! still gives the rest of its text.

use std::collections::{HashMap, HashSet};

use gantry_core::Notification;
use gantry_core::projection::tool_outcome;
use gantry_types::{
    ApprovalDecisionKind, Delta, DeltaKind, Event, EventPayload, Item, ItemId, ItemKind,
    ItemStatus, TurnId, TurnStatus,
};
use serde_json::{Value, json};

use super::ResumePoint;
use crate::service::wire_goal;
use crate::wire::v0_10::{UserInputOption, UserInputQuestion, UserInputRequest};
use crate::wire::{EventFrame, ExecApprovalRequestEvent, ResponseChannel, ReviewDecision};

/// A frame and where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Framed {
    /// The frame.
    pub frame: EventFrame,
    /// Where a client that has it stands.
    pub position: ResumePoint,
}

/// What the mapper knows of an item.
struct ItemInfo {
    round: u32,
    turn: TurnId,
    /// Bytes of its output streamed so far.
    streamed: usize,
    /// The command line, for a command's output.
    command: Option<String>,
    /// Whether its start frames went out.
    started: bool,
}

/// Turns a thread's notifications into frames.
pub struct FrameMapper {
    open: Option<(TurnId, u32)>,
    items: HashMap<ItemId, ItemInfo>,
    /// Items whose next delta is their whole text so far (a resumed
    /// subscription's first delta), not an increment.
    resync: HashSet<ItemId>,
    /// MCP tools by full name: (server, tool).
    mcp_tools: HashMap<String, (String, String)>,
}

impl FrameMapper {
    /// A mapper; `mcp_tools` maps a tool's full name to its server and tool.
    pub fn new(mcp_tools: HashMap<String, (String, String)>) -> Self {
        Self {
            open: None,
            items: HashMap::new(),
            resync: HashSet::new(),
            mcp_tools,
        }
    }

    /// The client has the first `offset` bytes of `item`'s output: its next
    /// delta (the text so far) goes out from there.
    pub fn resume_item(&mut self, item: ItemId, offset: usize) {
        self.resync.insert(item.clone());
        if let Some(info) = self.items.get_mut(&item) {
            info.streamed = offset;
        } else {
            // Known once its events are read; keep the offset meanwhile.
            self.items.insert(
                item,
                ItemInfo {
                    round: 0,
                    turn: TurnId(String::new()),
                    streamed: offset,
                    command: None,
                    started: false,
                },
            );
        }
    }

    /// Every item in progress gets its text so far next (a subscription
    /// picked up after a lag), of which the client has what was streamed.
    pub fn resync_open_items(&mut self) {
        self.resync.extend(
            self.items
                .iter()
                .filter(|(_, i)| i.started)
                .map(|(id, _)| id.clone()),
        );
    }

    /// The frames of one notification.
    pub fn map(&mut self, notification: &Notification) -> Vec<Framed> {
        match notification {
            Notification::Event(event) => {
                let frames = self.event(event);
                let position = self.position(event.seq);
                frames
                    .into_iter()
                    .map(|frame| Framed {
                        frame,
                        position: position.clone(),
                    })
                    .collect()
            }
            Notification::Delta(delta) => self.delta(delta).into_iter().collect(),
            Notification::Lagged { .. } => Vec::new(),
        }
    }

    fn delta(&mut self, delta: &Delta) -> Option<Framed> {
        let resync = self.resync.remove(&delta.item_id);
        let info = self.items.get_mut(&delta.item_id)?;
        let text = delta.kind.text();
        let new = if resync {
            let rest = text.get(info.streamed..).unwrap_or_default();
            info.streamed = text.len().max(info.streamed);
            rest
        } else {
            info.streamed += text.len();
            text
        };
        if new.is_empty() {
            return None;
        }
        let response_id = response_id(&info.turn, info.round);
        let frame = match &delta.kind {
            DeltaKind::AgentText(_) => EventFrame::ResponseDelta {
                response_id,
                delta: new.to_owned(),
                channel: ResponseChannel::Text,
            },
            DeltaKind::Reasoning(_) => EventFrame::ResponseDelta {
                response_id,
                delta: new.to_owned(),
                channel: ResponseChannel::Reasoning,
            },
            DeltaKind::CommandOutput(_) => EventFrame::ExecCommandOutputDelta {
                command: info.command.clone().unwrap_or_default(),
                delta: new.to_owned(),
            },
            DeltaKind::StructuredOutput(_) => return None,
        };
        Some(Framed {
            frame,
            position: self.position(delta.after_seq),
        })
    }

    /// Where a client stands after `after_seq` with what was streamed of
    /// every item in progress: parallel items (commands of one round, text
    /// beside reasoning) each have their own offset.
    fn position(&self, after_seq: u64) -> ResumePoint {
        let mut items: Vec<(ItemId, usize)> = self
            .items
            .iter()
            .filter(|(_, info)| info.started && info.streamed > 0)
            .map(|(id, info)| (id.clone(), info.streamed))
            .collect();
        items.sort();
        ResumePoint { after_seq, items }
    }

    fn event(&mut self, event: &Event) -> Vec<EventFrame> {
        let mut out = Vec::new();
        match &event.payload {
            EventPayload::TurnStarted { turn } => {
                self.close(&mut out);
                out.push(EventFrame::TurnStarted {
                    turn_id: turn.id.0.clone(),
                });
            }
            EventPayload::ItemStarted { item } => self.item_started(item, &mut out),
            EventPayload::ItemCompleted { item } => {
                let started = self.items.get(&item.id).is_some_and(|i| i.started);
                if !started {
                    self.item_started(item, &mut out);
                }
                self.item_completed(item, &mut out);
            }
            EventPayload::TurnCompleted {
                turn_id,
                status,
                error,
                ..
            } => {
                self.close(&mut out);
                self.items.retain(|_, info| &info.turn != turn_id);
                out.push(match status {
                    TurnStatus::Completed | TurnStatus::Running => EventFrame::TurnComplete {
                        turn_id: turn_id.0.clone(),
                    },
                    TurnStatus::Interrupted => EventFrame::TurnAborted {
                        turn_id: turn_id.0.clone(),
                        reason: "interrupted".to_owned(),
                    },
                    TurnStatus::Failed => EventFrame::TurnAborted {
                        turn_id: turn_id.0.clone(),
                        reason: error.clone().unwrap_or_else(|| "failed".to_owned()),
                    },
                });
            }
            EventPayload::GoalUpdated { goal } => out.push(EventFrame::ThreadGoalUpdated {
                goal: wire_goal(goal),
            }),
            EventPayload::GoalCleared => out.push(EventFrame::ThreadGoalCleared {
                thread_id: event.thread_id.0.clone(),
            }),
            _ => {}
        }
        out
    }

    /// Ends the open response, if any.
    fn close(&mut self, out: &mut Vec<EventFrame>) {
        if let Some((turn, round)) = self.open.take() {
            out.push(EventFrame::ResponseEnd {
                response_id: response_id(&turn, round),
            });
        }
    }

    /// Opens the response of `item`'s round, ending the previous one.
    fn open_round(&mut self, item: &Item, out: &mut Vec<EventFrame>) {
        if item.round == 0 {
            return;
        }
        let key = (item.turn_id.clone(), item.round);
        if self.open.as_ref() == Some(&key) {
            return;
        }
        self.close(out);
        out.push(EventFrame::ResponseStart {
            response_id: response_id(&item.turn_id, item.round),
        });
        self.open = Some(key);
    }

    fn item_started(&mut self, item: &Item, out: &mut Vec<EventFrame>) {
        self.open_round(item, out);
        let streamed = self.items.get(&item.id).map_or(0, |i| i.streamed);
        let command = match &item.kind {
            ItemKind::CommandExecution { command, .. } => Some(command.clone()),
            _ => None,
        };
        self.items.insert(
            item.id.clone(),
            ItemInfo {
                round: item.round,
                turn: item.turn_id.clone(),
                streamed,
                command,
                started: true,
            },
        );
        let response_id = response_id(&item.turn_id, item.round);
        if let Some(origin) = item.public_tool_call() {
            out.push(EventFrame::ToolCallStart {
                response_id: response_id.clone(),
                tool_name: origin.name.clone(),
                arguments: serde_json::from_str(&origin.arguments)
                    .unwrap_or_else(|_| Value::String(origin.arguments.clone())),
            });
        }
        match &item.kind {
            ItemKind::CommandExecution { command, cwd, .. } => {
                out.push(EventFrame::ExecCommandBegin {
                    command: command.clone(),
                    cwd: cwd.clone(),
                });
            }
            ItemKind::FileChange { path, .. } => {
                out.push(EventFrame::PatchApplyBegin { path: path.clone() });
            }
            ItemKind::ToolCall { name, .. } => {
                if let Some((server, tool)) = self.mcp_tools.get(name) {
                    out.push(EventFrame::McpToolCallBegin {
                        server_name: server.clone(),
                        tool_name: tool.clone(),
                    });
                }
            }
            ItemKind::Approval {
                approval_id,
                request,
                ..
            } if item.status == ItemStatus::InProgress => {
                let command = request.command.clone().unwrap_or_else(|| {
                    format!("{} {}", request.tool, request.arguments)
                        .trim()
                        .to_owned()
                });
                let event = ExecApprovalRequestEvent {
                    call_id: request.call_id.clone(),
                    approval_id: approval_id.clone(),
                    turn_id: item.turn_id.0.clone(),
                    command,
                    cwd: request.cwd.clone(),
                    reason: request.reason.clone(),
                    matched_rule: request.matched_rules.first().map(|r| r.as_str().into()),
                    network_approval_context: None,
                    proposed_execpolicy_amendment: Vec::new(),
                    proposed_network_policy_amendments: Vec::new(),
                    additional_permissions: Vec::new(),
                    available_decisions: request
                        .available_decisions
                        .iter()
                        .flat_map(|kind| review_decisions(*kind))
                        .collect(),
                };
                // A file tool's approval is a patch's (no command line).
                out.push(
                    if request.command.is_none() && is_file_tool(&request.tool) {
                        EventFrame::ApplyPatchApprovalRequest { request: event }
                    } else {
                        EventFrame::ExecApprovalRequest { request: event }
                    },
                );
            }
            ItemKind::UserInput {
                request_id,
                call_id,
                questions,
                ..
            } if item.status == ItemStatus::InProgress => {
                out.push(EventFrame::UserInputRequest {
                    request: user_input_request(&item.turn_id, request_id, call_id, questions),
                });
            }
            _ => {}
        }
    }

    fn item_completed(&mut self, item: &Item, out: &mut Vec<EventFrame>) {
        self.resync.remove(&item.id);
        let streamed = self.items.remove(&item.id).map_or(0, |i| i.streamed);
        let response_id = response_id(&item.turn_id, item.round);
        let rest = |text: &str| text.get(streamed..).unwrap_or_default().to_owned();
        match &item.kind {
            ItemKind::AgentMessage { text } | ItemKind::Reasoning { text, .. } => {
                let rest = rest(text);
                if !rest.is_empty() {
                    let channel = if matches!(item.kind, ItemKind::Reasoning { .. }) {
                        ResponseChannel::Reasoning
                    } else {
                        ResponseChannel::Text
                    };
                    out.push(EventFrame::ResponseDelta {
                        response_id: response_id.clone(),
                        delta: rest,
                        channel,
                    });
                }
            }
            ItemKind::CommandExecution {
                command,
                output,
                exit_code,
                ..
            } => {
                // A capped output may be shorter than what streamed: only a
                // command that streamed nothing gets its output here.
                if streamed == 0 && !output.is_empty() {
                    out.push(EventFrame::ExecCommandOutputDelta {
                        command: command.clone(),
                        delta: output.clone(),
                    });
                }
                out.push(EventFrame::ExecCommandEnd {
                    command: command.clone(),
                    exit_code: exit_code.unwrap_or(-1),
                });
            }
            ItemKind::FileChange { path, .. } => out.push(EventFrame::PatchApplyEnd {
                path: path.clone(),
                ok: !tool_outcome(item).is_failure(),
            }),
            ItemKind::ToolCall { name, .. } => {
                if let Some((server, tool)) = self.mcp_tools.get(name) {
                    out.push(EventFrame::McpToolCallEnd {
                        server_name: server.clone(),
                        tool_name: tool.clone(),
                        ok: !tool_outcome(item).is_failure(),
                    });
                }
            }
            ItemKind::Error { message } => out.push(EventFrame::Error {
                response_id: if item.round == 0 {
                    item.turn_id.0.clone()
                } else {
                    response_id.clone()
                },
                message: message.clone(),
            }),
            _ => {}
        }
        if let Some(origin) = item.public_tool_call() {
            let success = !tool_outcome(item).is_failure();
            let output = match &item.kind {
                ItemKind::ToolCall { name, result, .. } if self.mcp_tools.contains_key(name) => {
                    json!({ "type": "mcp", "result": { "content": result, "ok": success } })
                }
                _ => json!({ "type": "function", "body": origin.output, "success": success }),
            };
            out.push(EventFrame::ToolCallResult {
                response_id,
                tool_name: origin.name.clone(),
                output,
            });
        }
    }
}

/// A question of the agent's as 0.10's `user_input_request` carries it.
fn user_input_request(
    turn: &TurnId,
    request_id: &str,
    call_id: &str,
    questions: &[gantry_types::UserInputQuestion],
) -> UserInputRequest {
    UserInputRequest {
        call_id: call_id.to_owned(),
        turn_id: turn.0.clone(),
        request_id: request_id.to_owned(),
        questions: questions
            .iter()
            .map(|q| UserInputQuestion {
                header: q.header.clone(),
                id: q.id.clone(),
                question: q.question.clone(),
                options: q
                    .options
                    .iter()
                    .map(|o| UserInputOption {
                        label: o.label.clone(),
                        description: o.description.clone(),
                    })
                    .collect(),
                allow_free_text: q.allow_free_text,
                multi_select: q.multi_select,
            })
            .collect(),
    }
}

/// The id of a turn's model round as a response.
fn response_id(turn: &TurnId, round: u32) -> String {
    format!("{}.{round}", turn.0)
}

/// Tools whose approval is a patch's: they change files, with no command line.
fn is_file_tool(tool: &str) -> bool {
    matches!(tool, "write_file" | "edit_file")
}

/// The CodeWhale decisions a Gantry answer kind stands for.
fn review_decisions(kind: ApprovalDecisionKind) -> Vec<ReviewDecision> {
    match kind {
        ApprovalDecisionKind::Approve => vec![ReviewDecision::Approved],
        ApprovalDecisionKind::ApproveForSession => vec![ReviewDecision::ApprovedForSession],
        ApprovalDecisionKind::Deny => vec![ReviewDecision::Denied],
        ApprovalDecisionKind::Abort => vec![ReviewDecision::Abort],
    }
}

//! `Generate` and `StreamGenerate`: one turn on the user's message.

use std::collections::BTreeMap;
use std::collections::HashMap;

use gantry_core::{IfBusy, UserInput};
use gantry_types::{ThreadId, TurnFailure, TurnStatus, Usage};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use super::chunks::{TurnFeed, Update, pb_usage, usage_metadata};
use super::input::{prompt, ready_session};
use crate::pb;
use crate::service::RpcStream;
use crate::state::Ctx;
use crate::status::{status, turn_failed};

/// Chunks buffered between the turn and a slow client; beyond that the
/// feed waits (and, if far behind, catches up from the log).
const STREAM_BUFFER: usize = 256;

/// Starts a turn on the request's user message, keeping the caller's
/// `traceparent`; the feed that follows it.
async fn start(
    ctx: &Ctx,
    req: &pb::GenerateRequest,
    trace_parent: Option<String>,
) -> Result<(ThreadId, TurnFeed), Status> {
    let (id, from) = ready_session(ctx, &req.session_id).await?;
    let input = UserInput {
        text: prompt(&req.messages)?,
        trace_parent,
        ..UserInput::default()
    };
    // Subscribed before the turn starts: nothing of it can be missed.
    let feed = ctx.engine.feeds().follow(&id, from).await.map_err(status)?;
    let turn = ctx
        .engine
        .turns()
        .send_input(&id, input, IfBusy::Reject)
        .await
        .map_err(status)?;
    Ok((id, TurnFeed::new(turn, feed)))
}

/// How an ended turn answers: `Ok(finish_reason)` for a completed turn,
/// else the status a client gets (`UNAVAILABLE` when the model server is
/// unreachable, `CANCELLED` for an interrupted turn).
fn outcome(
    status: TurnStatus,
    error: Option<&str>,
    failure: Option<TurnFailure>,
) -> Result<&'static str, Status> {
    match status {
        TurnStatus::Completed => Ok("stop"),
        TurnStatus::Interrupted => Err(Status::cancelled(format!(
            "the turn was interrupted: {}",
            error.unwrap_or("cancelled")
        ))),
        TurnStatus::Failed | TurnStatus::Running => {
            Err(turn_failed(failure, error.unwrap_or("the turn failed")))
        }
    }
}

/// `Generate`: runs a turn to its end; the final assistant message, every
/// tool call with its result, the usage and the finish reason.
pub(crate) async fn generate(
    ctx: &Ctx,
    req: pb::GenerateRequest,
    trace_parent: Option<String>,
) -> Result<pb::GenerateResponse, Status> {
    let (id, mut feed) = start(ctx, &req, trace_parent).await?;
    let turn_id = feed.turn().to_string();
    // The answer is the text since the last tool call (the final round's).
    let mut answer = String::new();
    let mut calls: Vec<pb::ToolCall> = Vec::new();
    let mut order: BTreeMap<String, usize> = BTreeMap::new();
    let (usage, finish_reason) = loop {
        let updates = feed.next().await;
        if updates.is_empty() {
            return Err(Status::internal("the turn's events ended early"));
        }
        let mut ended: Option<(Usage, &'static str)> = None;
        for update in updates {
            match update {
                Update::Text(text) => answer.push_str(&text),
                Update::ToolStarted(call) => {
                    answer.clear();
                    order.insert(call.id.clone(), calls.len());
                    calls.push(call);
                }
                Update::ToolFinished(call) => match order.get(&call.id) {
                    Some(&i) => calls[i] = call,
                    None => {
                        order.insert(call.id.clone(), calls.len());
                        calls.push(call);
                    }
                },
                Update::Note(_) | Update::Round(_) => {}
                Update::Ended {
                    status,
                    usage,
                    error,
                    failure,
                } => ended = Some((usage, outcome(status, error.as_deref(), failure)?)),
            }
        }
        if let Some(end) = ended {
            break end;
        }
    };
    let mut metadata = usage_metadata(&usage);
    metadata.insert("turn_id".to_owned(), turn_id);
    Ok(pb::GenerateResponse {
        session_id: id.to_string(),
        message: Some(pb::Message {
            role: "assistant".to_owned(),
            content: answer,
            metadata: HashMap::new(),
        }),
        tool_calls: calls,
        usage: Some(pb_usage(&usage)),
        finish_reason: finish_reason.to_owned(),
        metadata,
    })
}

/// `StreamGenerate`: the turn as it happens: `metadata` (turn started,
/// approvals and external tasks waiting for a client), `content` (text as
/// the model writes it), `tool_call` / `tool_result`, then `done` with the
/// full answer and the usage. A failed turn ends the stream with its status
/// instead of `done`; a client that goes away interrupts the turn.
pub(crate) async fn stream_generate(
    ctx: &Ctx,
    req: pb::GenerateRequest,
    trace_parent: Option<String>,
) -> Result<RpcStream<pb::GenerateChunk>, Status> {
    let (id, feed) = start(ctx, &req, trace_parent).await?;
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let engine = ctx.engine.clone();
    tokio::spawn(async move {
        if pump(&id, feed, &tx).await.is_err() {
            // The client is gone: nobody wants the rest of the turn.
            let _ = engine.turns().interrupt(&id).await;
        }
    });
    Ok(Box::pin(ReceiverStream::new(rx)))
}

/// Sends the feed's chunks until the turn ends; `Err` if the client left.
async fn pump(
    id: &ThreadId,
    mut feed: TurnFeed,
    tx: &mpsc::Sender<Result<pb::GenerateChunk, Status>>,
) -> Result<(), ()> {
    let session_id = id.to_string();
    let chunk = |kind: &str| pb::GenerateChunk {
        r#type: kind.to_owned(),
        session_id: session_id.clone(),
        ..pb::GenerateChunk::default()
    };
    let mut answer = String::new();
    loop {
        let updates = feed.next().await;
        if updates.is_empty() {
            return Ok(());
        }
        for update in updates {
            let out = match update {
                Update::Text(text) => {
                    answer.push_str(&text);
                    Ok(pb::GenerateChunk {
                        content: text,
                        ..chunk("content")
                    })
                }
                Update::ToolStarted(call) => {
                    answer.clear();
                    Ok(pb::GenerateChunk {
                        tool_call: Some(call),
                        ..chunk("tool_call")
                    })
                }
                Update::ToolFinished(mut call) => {
                    let mut result = call.result.take();
                    if let Some(r) = result.as_mut() {
                        r.metadata.insert("tool_id".to_owned(), call.id.clone());
                        r.metadata.insert("tool_name".to_owned(), call.name.clone());
                    }
                    Ok(pb::GenerateChunk {
                        tool_call: Some(call),
                        tool_result: result,
                        ..chunk("tool_result")
                    })
                }
                Update::Note(metadata) => Ok(pb::GenerateChunk {
                    metadata,
                    ..chunk("metadata")
                }),
                Update::Round(_) => continue,
                Update::Ended {
                    status,
                    usage,
                    error,
                    failure,
                } => outcome(status, error.as_deref(), failure).map(|finish_reason| {
                    let mut metadata = usage_metadata(&usage);
                    metadata.insert("turn_id".to_owned(), feed.turn().to_string());
                    pb::GenerateChunk {
                        content: std::mem::take(&mut answer),
                        metadata,
                        finish_reason: finish_reason.to_owned(),
                        ..chunk("done")
                    }
                }),
            };
            tx.send(out).await.map_err(|_| ())?;
        }
    }
}

//! Thread, turn and item updates, thread names and token usage, and
//! refused requests: each change is one row written with one log entry.

use gantry_runner_protocol::messages::{
    ItemUpdate, ThreadStatus, ThreadTokenUsageUpdate, TurnUpdate,
};

use super::Context;
use super::merge::{self, DELETED, READY, lifecycle};
use crate::requests::{self, Params};
use crate::store::{ItemRecord, RequestRecord, StoreError, ThreadRecord, TurnRecord, Upsert};
use crate::views::{CommandView, ErrorView, ItemView, ThreadView, TurnView, UsageView, to_json};

/// Log entry kinds.
const THREAD: &str = "thread";
const TURN: &str = "turn";
const ITEM: &str = "item";
const ERROR: &str = "error";
const USAGE: &str = "usage";

/// A thread became ready or was deleted. A new thread is recorded only as
/// the answer to our `CreateThreadRequest` (the runner chose its id).
pub(super) async fn thread_update(
    ctx: &mut Context<'_>,
    thread_id: &str,
    status: ThreadStatus,
) -> Result<(), StoreError> {
    let incoming = match status {
        ThreadStatus::Ready => READY,
        ThreadStatus::Deleted => DELETED,
        ThreadStatus::Unknown => return Ok(()),
    };
    let thread = match ctx.thread(thread_id).await? {
        Some(t) if t.runner_id != ctx.runner_id => {
            tracing::warn!(runner = ctx.runner_id, thread = %t.id, "update for another runner's thread; ignored");
            return Ok(());
        }
        Some(t) => {
            let status = lifecycle(&t.status, incoming);
            if status == t.status {
                return Ok(());
            }
            ThreadRecord {
                status: status.to_owned(),
                updated_at: ctx.now,
                ..t
            }
        }
        None => match new_thread(ctx, thread_id, incoming).await? {
            Some(t) => t,
            None => {
                tracing::debug!(runner = ctx.runner_id, thread = %thread_id, "update for an unknown thread; ignored");
                return Ok(());
            }
        },
    };
    ctx.link_request(Some(&thread.id), None);
    let data = to_json(&ThreadView::from(&thread));
    let id = thread.id.clone();
    ctx.append(&id, Upsert::Thread(thread), THREAD, data).await
}

/// The thread a `CreateThreadRequest` answer creates, if this is one.
async fn new_thread(
    ctx: &mut Context<'_>,
    thread_id: &str,
    incoming: &str,
) -> Result<Option<ThreadRecord>, StoreError> {
    let Some(request) = ctx
        .request
        .clone()
        .filter(|r| r.kind == requests::CREATE_THREAD)
    else {
        return Ok(None);
    };
    let Some(agent_id) = request.agent_id.clone() else {
        return Ok(None);
    };
    if ctx.agent(&agent_id).await?.is_none() {
        return Ok(None);
    }
    let params = Params::parse(&request.params);
    Ok(Some(ThreadRecord {
        id: thread_id.to_owned(),
        agent_id,
        runner_id: ctx.runner_id.to_owned(),
        model: params.model.unwrap_or_default(),
        reasoning_level: params.reasoning_level,
        status: incoming.to_owned(),
        created_at: ctx.now,
        updated_at: ctx.now,
        name: None,
        token_usage: None,
        mcp_servers: params
            .mcp_servers
            .filter(|servers| !servers.is_empty())
            .and_then(|servers| serde_json::to_string(&servers).ok()),
    }))
}

/// A turn started or completed: as the answer to one of our messages, or
/// (0.7.0) in a thread of this runner that the update names.
pub(super) async fn turn_update(
    ctx: &mut Context<'_>,
    update: &TurnUpdate,
) -> Result<(), StoreError> {
    let Some((request, thread_id)) = attribute(ctx, update.thread_id.as_deref()).await? else {
        tracing::debug!(runner = ctx.runner_id, turn = %update.sdk_turn_id, "turn update of no thread of this runner; ignored");
        return Ok(());
    };
    let Some(status) = merge::turn_status(update.status) else {
        return Ok(());
    };
    let current = ctx.turn(&thread_id, &update.sdk_turn_id).await?;
    let request_id = match (request, &current) {
        // The first turn a request reports is the one it started or steered.
        (Some(request), _) => {
            ctx.link_request(None, Some(&update.sdk_turn_id));
            request.id
        }
        (None, Some(turn)) => turn.request_id.clone(),
        // A turn no request of ours started (the runner's own).
        (None, None) => String::new(),
    };
    let incoming = TurnRecord {
        thread_id: thread_id.clone(),
        id: update.sdk_turn_id.clone(),
        request_id,
        status: status.to_owned(),
        first_seq: 0,
        created_at: ctx.now,
        updated_at: ctx.now,
    };
    let Some(turn) = merge::turn(current.as_ref(), incoming) else {
        return Ok(());
    };
    write_turn(ctx, &thread_id, turn).await
}

/// Writes a turn's new state; one that ended ends its items still running
/// first (CompanyHelm's runner never ends an interrupted turn's message),
/// so whoever sees the turn end finds every item of it ended.
async fn write_turn(
    ctx: &mut Context<'_>,
    thread_id: &str,
    turn: TurnRecord,
) -> Result<(), StoreError> {
    if merge::ended(&turn.status) {
        for item in ctx.running_items(thread_id, &turn.id).await? {
            let item = merge::item_ended_with_turn(&item, &turn.status, ctx.now);
            let data = to_json(&ItemView::from(&item));
            ctx.append(thread_id, Upsert::Item(item), ITEM, data)
                .await?;
        }
    }
    let data = to_json(&TurnView::from(&turn));
    ctx.append(thread_id, Upsert::Turn(turn), TURN, data).await
}

/// An interrupt of the thread is about to go out: its running turn, if
/// any, is `interrupting` from now on, so its end reads as interrupted.
pub(super) async fn interrupting(ctx: &mut Context<'_>, thread_id: &str) -> Result<(), StoreError> {
    let Some(latest) = ctx.latest_turn(thread_id).await? else {
        return Ok(());
    };
    let Some(turn) = merge::turn_to(&latest, merge::INTERRUPTING, ctx.now) else {
        return Ok(());
    };
    write_turn(ctx, thread_id, turn).await
}

/// An item started, changed or completed, in the turn of the message it
/// echoes (0.2.0) or the turn it names (0.7.0).
pub(super) async fn item_update(
    ctx: &mut Context<'_>,
    update: &ItemUpdate,
) -> Result<(), StoreError> {
    let Some((request, thread_id)) = attribute(ctx, update.thread_id.as_deref()).await? else {
        tracing::debug!(runner = ctx.runner_id, item = %update.sdk_item_id, "item update of no thread of this runner; ignored");
        return Ok(());
    };
    let Some(status) = merge::item_status(update.status) else {
        return Ok(());
    };
    let command = update.command_execution_item.as_ref().map(|c| {
        to_json(&CommandView {
            command: c.command.clone(),
            cwd: c.cwd.clone(),
            process_id: c.process_id.clone(),
            output: c.output.clone(),
        })
    });
    let turn_id = update
        .sdk_turn_id
        .clone()
        .or_else(|| request.and_then(|r| r.turn_id));
    let current = ctx
        .item(&thread_id, &update.sdk_item_id, turn_id.as_deref())
        .await?;
    let incoming = ItemRecord {
        thread_id: thread_id.clone(),
        id: update.sdk_item_id.clone(),
        turn_id,
        item_type: merge::item_type(update.item_type).to_owned(),
        status: status.to_owned(),
        text: update.text.clone(),
        command,
        first_seq: 0,
        created_at: ctx.now,
        updated_at: ctx.now,
    };
    let Some(item) = merge::item(current.as_ref(), incoming) else {
        return Ok(());
    };
    let data = to_json(&ItemView::from(&item));
    ctx.append(&thread_id, Upsert::Item(item), ITEM, data).await
}

/// A thread's name changed (0.7.0).
pub(super) async fn thread_name(
    ctx: &mut Context<'_>,
    thread_id: &str,
    name: Option<&str>,
) -> Result<(), StoreError> {
    let Some(thread) = ctx.own_thread(thread_id).await? else {
        return Ok(());
    };
    if thread.name.as_deref() == name {
        return Ok(());
    }
    let thread = ThreadRecord {
        name: name.map(str::to_owned),
        updated_at: ctx.now,
        ..thread
    };
    let data = to_json(&ThreadView::from(&thread));
    ctx.append(thread_id, Upsert::Thread(thread), THREAD, data)
        .await
}

/// A thread's token usage after a model call (0.7.0): kept with the
/// thread, and logged.
pub(super) async fn token_usage(
    ctx: &mut Context<'_>,
    update: &ThreadTokenUsageUpdate,
) -> Result<(), StoreError> {
    let Some(thread) = ctx.own_thread(&update.thread_id).await? else {
        return Ok(());
    };
    let usage = UsageView::from(update);
    let thread = ThreadRecord {
        token_usage: Some(to_json(&usage)),
        updated_at: ctx.now,
        ..thread
    };
    let data = to_json(&usage);
    ctx.append(&update.thread_id, Upsert::Thread(thread), USAGE, data)
        .await
}

/// The thread an update belongs to, and the message request it echoes if
/// any: through the request (0.2.0), else by the thread it names, which
/// must be this runner's (0.7.0).
async fn attribute(
    ctx: &mut Context<'_>,
    named: Option<&str>,
) -> Result<Option<(Option<RequestRecord>, String)>, StoreError> {
    if let Some((request, thread_id)) = message_request(ctx)
        && named.is_none_or(|n| n == thread_id)
    {
        return Ok(Some((Some(request), thread_id)));
    }
    let Some(named) = named else {
        return Ok(None);
    };
    Ok(ctx.own_thread(named).await?.map(|t| (None, t.id)))
}

/// The runner refused a request; logged in the thread it concerned, if any.
/// An error answering the message that started a turn still running ends
/// that turn as failed: CompanyHelm's runner says a turn its SDK failed
/// no other way.
pub(super) async fn request_error(
    ctx: &mut Context<'_>,
    error_message: &str,
) -> Result<(), StoreError> {
    let Some(request) = ctx.request.clone() else {
        tracing::debug!(runner = ctx.runner_id, error = %error_message, "error for an unknown request; ignored");
        return Ok(());
    };
    let Some(thread_id) = request.thread_id.as_deref() else {
        return Ok(());
    };
    let data = to_json(&ErrorView {
        request_id: &request.id,
        error: error_message,
    });
    ctx.append(thread_id, Upsert::Nothing, ERROR, data).await?;
    let started = match request.turn_id.as_deref() {
        Some(turn_id) if request.kind == requests::CREATE_USER_MESSAGE => {
            ctx.turn(thread_id, turn_id).await?
        }
        _ => None,
    };
    match started
        .filter(|t| t.request_id == request.id)
        .and_then(|t| merge::turn_to(&t, merge::FAILED, ctx.now))
    {
        Some(turn) => write_turn(ctx, thread_id, turn).await,
        None => Ok(()),
    }
}

/// The message request an update echoes, and its thread.
fn message_request(ctx: &Context<'_>) -> Option<(RequestRecord, String)> {
    let request = ctx
        .request
        .as_ref()
        .filter(|r| r.kind == requests::CREATE_USER_MESSAGE)?;
    let thread_id = request.thread_id.clone()?;
    Some((request.clone(), thread_id))
}

//! Thread, turn and item updates, thread names and token usage, and
//! refused requests: each change is one row written with one log entry.

use gantry_runner_protocol::messages::{
    ItemUpdate, ThreadStatus, ThreadTokenUsageUpdate, TurnUpdate,
};

use super::Context;
use super::merge::{self, DELETED, READY, lifecycle};
use crate::requests::{self, Params};
use crate::store::{
    ItemRecord, RequestRecord, StoreError, ThreadChange, ThreadRecord, ThreadUpdateRecord,
    TurnRecord, Upsert,
};
use crate::views::{CommandView, ErrorView, ItemView, ThreadView, TurnView, UsageView, to_json};

/// Log entry kinds.
const THREAD: &str = "thread";
const TURN: &str = "turn";
const ITEM: &str = "item";
const ERROR: &str = "error";
const USAGE: &str = "usage";

/// Entry produced by an update, if it changed anything.
type Entry = Option<ThreadUpdateRecord>;

/// A thread became ready or was deleted. A new thread is recorded only as
/// the answer to our `CreateThreadRequest` (the runner chose its id).
pub(super) async fn thread_update(
    ctx: &Context<'_>,
    thread_id: &str,
    status: ThreadStatus,
) -> Result<Entry, StoreError> {
    let incoming = match status {
        ThreadStatus::Ready => READY,
        ThreadStatus::Deleted => DELETED,
        ThreadStatus::Unknown => return Ok(None),
    };
    let thread = match ctx.store.thread(thread_id).await? {
        Some(t) if t.runner_id != ctx.runner_id => {
            tracing::warn!(runner = ctx.runner_id, thread = %t.id, "update for another runner's thread; ignored");
            return Ok(None);
        }
        Some(t) => {
            let status = lifecycle(&t.status, incoming);
            if status == t.status {
                return Ok(None);
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
                return Ok(None);
            }
        },
    };
    if let Some(request) = ctx.request {
        ctx.store
            .link_request(&request.id, Some(&thread.id), None)
            .await?;
    }
    let data = to_json(&ThreadView::from(&thread));
    append(
        ctx,
        &thread.id.clone(),
        Upsert::Thread(thread),
        THREAD,
        data,
    )
    .await
}

/// The thread a `CreateThreadRequest` answer creates, if this is one.
async fn new_thread(
    ctx: &Context<'_>,
    thread_id: &str,
    incoming: &str,
) -> Result<Option<ThreadRecord>, StoreError> {
    let Some(request) = ctx.request.filter(|r| r.kind == requests::CREATE_THREAD) else {
        return Ok(None);
    };
    let Some(agent_id) = request.agent_id.clone() else {
        return Ok(None);
    };
    if ctx.store.agent(&agent_id).await?.is_none() {
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
    ctx: &Context<'_>,
    update: &TurnUpdate,
) -> Result<Entry, StoreError> {
    let Some((request, thread_id)) = attribute(ctx, update.thread_id.as_deref()).await? else {
        tracing::debug!(runner = ctx.runner_id, turn = %update.sdk_turn_id, "turn update of no thread of this runner; ignored");
        return Ok(None);
    };
    let Some(status) = merge::turn_status(update.status) else {
        return Ok(None);
    };
    let current = ctx.store.turn(&thread_id, &update.sdk_turn_id).await?;
    let request_id = match (request, &current) {
        // The first turn a request reports is the one it started or steered.
        (Some(request), _) => {
            ctx.store
                .link_request(&request.id, None, Some(&update.sdk_turn_id))
                .await?;
            request.id.clone()
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
        return Ok(None);
    };
    let data = to_json(&TurnView::from(&turn));
    append(ctx, &thread_id, Upsert::Turn(turn), TURN, data).await
}

/// An item started, changed or completed, in the turn of the message it
/// echoes (0.2.0) or the turn it names (0.7.0).
pub(super) async fn item_update(
    ctx: &Context<'_>,
    update: &ItemUpdate,
) -> Result<Entry, StoreError> {
    let Some((request, thread_id)) = attribute(ctx, update.thread_id.as_deref()).await? else {
        tracing::debug!(runner = ctx.runner_id, item = %update.sdk_item_id, "item update of no thread of this runner; ignored");
        return Ok(None);
    };
    let Some(status) = merge::item_status(update.status) else {
        return Ok(None);
    };
    let command = update.command_execution_item.as_ref().map(|c| {
        to_json(&CommandView {
            command: c.command.clone(),
            cwd: c.cwd.clone(),
            process_id: c.process_id.clone(),
            output: c.output.clone(),
        })
    });
    let current = ctx.store.item(&thread_id, &update.sdk_item_id).await?;
    let turn_id = update
        .sdk_turn_id
        .clone()
        .or_else(|| request.and_then(|r| r.turn_id.clone()));
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
        return Ok(None);
    };
    let data = to_json(&ItemView::from(&item));
    append(ctx, &thread_id, Upsert::Item(item), ITEM, data).await
}

/// A thread's name changed (0.7.0).
pub(super) async fn thread_name(
    ctx: &Context<'_>,
    thread_id: &str,
    name: Option<&str>,
) -> Result<Entry, StoreError> {
    let Some(thread) = own_thread(ctx, thread_id).await? else {
        return Ok(None);
    };
    if thread.name.as_deref() == name {
        return Ok(None);
    }
    let thread = ThreadRecord {
        name: name.map(str::to_owned),
        updated_at: ctx.now,
        ..thread
    };
    let data = to_json(&ThreadView::from(&thread));
    append(ctx, thread_id, Upsert::Thread(thread), THREAD, data).await
}

/// A thread's token usage after a model call (0.7.0): kept with the
/// thread, and logged.
pub(super) async fn token_usage(
    ctx: &Context<'_>,
    update: &ThreadTokenUsageUpdate,
) -> Result<Entry, StoreError> {
    let Some(thread) = own_thread(ctx, &update.thread_id).await? else {
        return Ok(None);
    };
    let usage = UsageView::from(update);
    let thread = ThreadRecord {
        token_usage: Some(to_json(&usage)),
        updated_at: ctx.now,
        ..thread
    };
    let data = to_json(&usage);
    append(ctx, &update.thread_id, Upsert::Thread(thread), USAGE, data).await
}

/// The thread an update belongs to, and the message request it echoes if
/// any: through the request (0.2.0), else by the thread it names, which
/// must be this runner's (0.7.0).
async fn attribute<'a>(
    ctx: &Context<'a>,
    named: Option<&str>,
) -> Result<Option<(Option<&'a RequestRecord>, String)>, StoreError> {
    if let Some((request, thread_id)) = message_request(ctx)
        && named.is_none_or(|n| n == thread_id)
    {
        return Ok(Some((Some(request), thread_id.to_owned())));
    }
    let Some(named) = named else {
        return Ok(None);
    };
    Ok(own_thread(ctx, named).await?.map(|t| (None, t.id)))
}

/// The thread, if it is this runner's.
async fn own_thread(
    ctx: &Context<'_>,
    thread_id: &str,
) -> Result<Option<ThreadRecord>, StoreError> {
    Ok(ctx
        .store
        .thread(thread_id)
        .await?
        .filter(|t| t.runner_id == ctx.runner_id))
}

/// The runner refused a request; logged in the thread it concerned, if any.
pub(super) async fn request_error(
    ctx: &Context<'_>,
    error_message: &str,
) -> Result<Entry, StoreError> {
    let Some(request) = ctx.request else {
        tracing::debug!(runner = ctx.runner_id, error = %error_message, "error for an unknown request; ignored");
        return Ok(None);
    };
    let Some(thread_id) = request.thread_id.as_deref() else {
        return Ok(None);
    };
    let data = to_json(&ErrorView {
        request_id: &request.id,
        error: error_message,
    });
    append(ctx, thread_id, Upsert::Nothing, ERROR, data).await
}

/// The message request an update echoes, and its thread.
fn message_request<'a>(ctx: &Context<'a>) -> Option<(&'a RequestRecord, &'a str)> {
    let request = ctx
        .request
        .filter(|r| r.kind == requests::CREATE_USER_MESSAGE)?;
    Some((request, request.thread_id.as_deref()?))
}

/// Writes `upsert` and its log entry.
async fn append(
    ctx: &Context<'_>,
    thread_id: &str,
    upsert: Upsert,
    kind: &str,
    data: String,
) -> Result<Entry, StoreError> {
    let change = ThreadChange {
        thread_id: thread_id.to_owned(),
        ts: ctx.now,
        upsert,
        kind: kind.to_owned(),
        data,
    };
    ctx.store.apply(&change).await.map(Some)
}

//! The session's context window: how full it is, compacting it (the model
//! summarises the conversation so far) and clearing it (the model sees
//! nothing before this point; the log keeps everything).

use gantry_types::{ThreadId, TurnStatus};
use tonic::Status;

use super::Ctx;
use crate::pb;
use crate::status::{session_id, status, turn_failed};
use crate::views::session::context_usage;

/// `GetContextUsage`: `total_tokens` is the estimated size of the session's
/// next model request; `prompt_tokens`/`completion_tokens` are what its
/// model calls used so far; `message_count` counts user and assistant
/// messages.
pub(crate) async fn get_context_usage(
    ctx: &Ctx,
    req: pb::GetContextUsageRequest,
) -> Result<pb::GetContextUsageResponse, Status> {
    let id = session_id(&req.session_id)?;
    Ok(pb::GetContextUsageResponse {
        usage: Some(usage(ctx, &id).await?),
    })
}

/// `CompactContext`: the model summarises the conversation, which then
/// stands in for it; answers once that turn has ended, with the usage
/// before and after. `FAILED_PRECONDITION` while a turn runs or for a
/// destroyed session; the model's failure as `generation` reports it
/// (`UNAVAILABLE` for an unreachable model server...).
pub(crate) async fn compact_context(
    ctx: &Ctx,
    req: pb::CompactContextRequest,
) -> Result<pb::CompactContextResponse, Status> {
    let id = session_id(&req.session_id)?;
    let before = usage(ctx, &id).await?;
    let turn = ctx.engine.turns().compact(&id).await.map_err(status)?;
    let ended = ctx.engine.turns().wait(&id, &turn).await.map_err(status)?;
    match ended.status {
        TurnStatus::Completed => {}
        TurnStatus::Interrupted => {
            return Err(Status::aborted("the compaction was interrupted"));
        }
        _ => {
            return Err(turn_failed(
                ended.failure,
                ended.error.as_deref().unwrap_or("the compaction failed"),
            ));
        }
    }
    Ok(pb::CompactContextResponse {
        success: true,
        before: Some(before),
        after: Some(usage(ctx, &id).await?),
    })
}

/// `ClearContext`: from now on the model sees nothing said before (the
/// instructions and tools stay); the conversation stays readable.
/// `FAILED_PRECONDITION` while a turn runs or for a destroyed session.
pub(crate) async fn clear_context(
    ctx: &Ctx,
    req: pb::ClearContextRequest,
) -> Result<pb::ClearContextResponse, Status> {
    let id = session_id(&req.session_id)?;
    // Clearing needs no model: its turn has ended when this returns.
    ctx.engine
        .turns()
        .clear_context(&id)
        .await
        .map_err(status)?;
    Ok(pb::ClearContextResponse { success: true })
}

/// The session's context usage, projected as `Session.context_usage` is.
async fn usage(ctx: &Ctx, id: &ThreadId) -> Result<pb::ContextUsage, Status> {
    let view = ctx.engine.threads().read(id).await.map_err(status)?;
    Ok(context_usage(&ctx.engine, &view))
}

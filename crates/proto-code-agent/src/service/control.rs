//! Control: cancel the running turn, pause and resume the session.

use tonic::Status;

use super::Ctx;
use crate::pb;
use crate::status::{session_id, status};

/// `Cancel`: interrupts the running turn (its model stream and tools are
/// stopped, pending approvals aborted) and returns once it ended.
/// `operation_id`, if given, must be the running turn's id (as sent in the
/// `turn_id` metadata of generation): `success` is false when nothing
/// matching was running.
pub(crate) async fn cancel(
    ctx: &Ctx,
    req: pb::CancelRequest,
) -> Result<pb::CancelResponse, Status> {
    let id = session_id(&req.session_id)?;
    let view = ctx.engine.threads().read(&id).await.map_err(status)?;
    let running = view.running_turn().map(|t| t.turn.id.to_string());
    let wanted = req
        .operation_id
        .as_deref()
        .map(str::trim)
        .filter(|o| !o.is_empty());
    if wanted.is_some() && wanted != running.as_deref() {
        return Ok(pb::CancelResponse { success: false });
    }
    let interrupted = ctx.engine.turns().interrupt(&id).await.map_err(status)?;
    Ok(pb::CancelResponse {
        success: interrupted.is_some(),
    })
}

/// `Pause`: no new model or tool call starts until `Resume` (a call in
/// progress finishes).
pub(crate) async fn pause(ctx: &Ctx, req: pb::PauseRequest) -> Result<pb::PauseResponse, Status> {
    let id = session_id(&req.session_id)?;
    ctx.live_session(&id).await?;
    ctx.engine.threads().pause(&id).await.map_err(status)?;
    Ok(pb::PauseResponse { success: true })
}

/// `Resume`: work continues where it paused.
pub(crate) async fn resume(
    ctx: &Ctx,
    req: pb::ResumeRequest,
) -> Result<pb::ResumeResponse, Status> {
    let id = session_id(&req.session_id)?;
    ctx.live_session(&id).await?;
    ctx.engine.threads().resume(&id).await.map_err(status)?;
    Ok(pb::ResumeResponse { success: true })
}

//! Lanes handed to external handlers, and their tasks.
//!
//! A model's tool call belongs to a lane (`query` for the read-only tools,
//! `execute` for everything with effects). A lane's handler says who runs
//! its calls: the engine (`internal`, the default), a client (`external`:
//! the call becomes an external task the client completes with
//! `CompleteExternalTask`), or the engine while clients watch (`hybrid`).

use gantry_grpc::clip;
use gantry_types::{
    DEFAULT_EXTERNAL_TIMEOUT_MS, HandlerMode, ItemKind, ItemStatus, Lane, LaneHandler, ThreadId,
    ThreadView,
};
use tonic::Status;

use super::Ctx;
use crate::names::wire;
use crate::pb;
use crate::status::{required, session_id, status};

/// `SetLaneHandler`: who runs the lane's tool calls from the next call on.
/// A `timeout_ms` of 0 is the default (60 s). `control` and `generate` are
/// accepted and stored, but no model tool call belongs to them (they are
/// the engine's own work), so only `query` and `execute` handlers change
/// what happens.
pub(crate) async fn set_lane_handler(
    ctx: &Ctx,
    req: pb::SetLaneHandlerRequest,
) -> Result<pb::SetLaneHandlerResponse, Status> {
    let id = session_id(&req.session_id)?;
    let lane = lane("lane", req.lane)?;
    let config = req
        .config
        .ok_or_else(|| Status::invalid_argument("config: required"))?;
    let handler = LaneHandler {
        lane,
        mode: mode(config.mode)?,
        timeout_ms: match config.timeout_ms {
            0 => DEFAULT_EXTERNAL_TIMEOUT_MS,
            ms => ms,
        },
    };
    ctx.live_session(&id).await?;
    ctx.engine
        .safety()
        .set_lane_handler(&id, handler)
        .await
        .map_err(status)?;
    let view = ctx.engine.threads().read(&id).await.map_err(status)?;
    Ok(pb::SetLaneHandlerResponse {
        success: true,
        config: Some(pb_config(&handler_of(&view, lane))),
    })
}

/// `GetLaneHandler`: the lane's handler; a lane never set is handled by the
/// engine (`internal`, default timeout).
pub(crate) async fn get_lane_handler(
    ctx: &Ctx,
    req: pb::GetLaneHandlerRequest,
) -> Result<pb::GetLaneHandlerResponse, Status> {
    let id = session_id(&req.session_id)?;
    let lane = lane("lane", req.lane)?;
    let view = ctx.engine.threads().read(&id).await.map_err(status)?;
    Ok(pb::GetLaneHandlerResponse {
        config: Some(pb_config(&handler_of(&view, lane))),
    })
}

/// `CompleteExternalTask`: the client's result of a pending external task;
/// the model gets `result` as the call's output (or, when `success` is
/// false, `error`). `NOT_FOUND` for a task the session never had,
/// `FAILED_PRECONDITION` for one already completed, timed out, or run by
/// the engine (a hybrid lane's).
pub(crate) async fn complete_external_task(
    ctx: &Ctx,
    req: pb::CompleteExternalTaskRequest,
) -> Result<pb::CompleteExternalTaskResponse, Status> {
    let id = session_id(&req.session_id)?;
    let task_id = required("task_id", &req.task_id)?;
    let view = ctx.engine.threads().read(&id).await.map_err(status)?;
    check_pending(&view, &id, task_id)?;
    let outcome = if req.success {
        Ok(req.result)
    } else if req.error.trim().is_empty() {
        Err("the client reported a failure".to_owned())
    } else {
        Err(req.error)
    };
    ctx.engine
        .safety()
        .complete_external_task(&id, task_id, outcome)
        .await
        .map_err(|e| match e {
            // Completed (or timed out) between the check and the answer.
            gantry_core::EngineError::InvalidInput(_) => already_done(task_id),
            other => status(other),
        })?;
    Ok(pb::CompleteExternalTaskResponse {
        success: true,
        error: String::new(),
    })
}

/// `ListPendingExternalTasks`: the tasks waiting for a client, with the
/// time they have left.
pub(crate) async fn list_pending_external_tasks(
    ctx: &Ctx,
    req: pb::ListPendingExternalTasksRequest,
) -> Result<pb::ListPendingExternalTasksResponse, Status> {
    let id = session_id(&req.session_id)?;
    let tasks = ctx
        .engine
        .safety()
        .pending_external_tasks(&id)
        .await
        .map_err(status)?;
    Ok(pb::ListPendingExternalTasksResponse {
        tasks: tasks
            .into_iter()
            .map(|t| pb::ExternalTask {
                task_id: t.task_id,
                session_id: id.to_string(),
                lane: pb_lane(t.lane) as i32,
                command_type: wire(&t.tool).to_owned(),
                payload: t.payload.to_string(),
                timeout_ms: t.timeout_ms,
                remaining_ms: t.remaining_ms,
            })
            .collect(),
    })
}

/// Whether `task_id` is a task of the session still waiting for a client.
fn check_pending(view: &ThreadView, id: &ThreadId, task_id: &str) -> Result<(), Status> {
    let task = view
        .turns
        .iter()
        .rev()
        .flat_map(|t| t.items.iter().rev())
        .find_map(|item| match &item.kind {
            ItemKind::ExternalTask {
                task_id: t, mode, ..
            } if t == task_id => Some((item.status, *mode)),
            _ => None,
        });
    match task {
        None => Err(Status::not_found(format!(
            "task_id: session {id} has no external task `{task_id}`",
            task_id = clip(task_id)
        ))),
        Some((_, HandlerMode::Hybrid)) => Err(Status::failed_precondition(format!(
            "task_id: `{task_id}` belongs to a hybrid lane: the engine runs it, clients only watch",
            task_id = clip(task_id)
        ))),
        Some((ItemStatus::InProgress, _)) => Ok(()),
        Some(_) => Err(already_done(task_id)),
    }
}

/// The status of a completion for a task that no longer waits.
fn already_done(task_id: &str) -> Status {
    Status::failed_precondition(format!(
        "task_id: external task `{task_id}` is no longer pending (completed, timed out or interrupted)",
        task_id = clip(task_id)
    ))
}

/// The handler of `lane` in the session: the one set, else the engine's own.
fn handler_of(view: &ThreadView, lane: Lane) -> LaneHandler {
    view.thread
        .lane_handlers
        .iter()
        .find(|h| h.lane == lane)
        .copied()
        .unwrap_or(LaneHandler {
            lane,
            mode: HandlerMode::Internal,
            timeout_ms: DEFAULT_EXTERNAL_TIMEOUT_MS,
        })
}

/// The proto's `LaneHandlerConfig`.
fn pb_config(handler: &LaneHandler) -> pb::LaneHandlerConfig {
    let mode = match handler.mode {
        HandlerMode::Internal => pb::TaskHandlerMode::Internal,
        HandlerMode::External => pb::TaskHandlerMode::External,
        HandlerMode::Hybrid => pb::TaskHandlerMode::Hybrid,
    };
    pb::LaneHandlerConfig {
        mode: mode as i32,
        timeout_ms: handler.timeout_ms,
    }
}

/// A handler mode from the wire; it must be given.
fn mode(value: i32) -> Result<HandlerMode, Status> {
    match pb::TaskHandlerMode::try_from(value) {
        Ok(pb::TaskHandlerMode::Internal) => Ok(HandlerMode::Internal),
        Ok(pb::TaskHandlerMode::External) => Ok(HandlerMode::External),
        Ok(pb::TaskHandlerMode::Hybrid) => Ok(HandlerMode::Hybrid),
        Ok(pb::TaskHandlerMode::Unknown) => Err(Status::invalid_argument(
            "config.mode: required (internal, external or hybrid)",
        )),
        Err(_) => Err(Status::invalid_argument(format!(
            "config.mode: unknown value {value}"
        ))),
    }
}

/// A lane from the wire (field `field`); it must be given.
pub(super) fn lane(field: &str, value: i32) -> Result<Lane, Status> {
    match pb::SessionLane::try_from(value) {
        Ok(pb::SessionLane::Control) => Ok(Lane::Control),
        Ok(pb::SessionLane::Query) => Ok(Lane::Query),
        Ok(pb::SessionLane::Execute) => Ok(Lane::Execute),
        Ok(pb::SessionLane::Generate) => Ok(Lane::Generate),
        Ok(pb::SessionLane::Unknown) => Err(Status::invalid_argument(format!(
            "{field}: required (control, query, execute or generate)"
        ))),
        Err(_) => Err(Status::invalid_argument(format!(
            "{field}: unknown value {value}"
        ))),
    }
}

/// The proto's `SessionLane`.
pub(super) fn pb_lane(lane: Lane) -> pb::SessionLane {
    match lane {
        Lane::Control => pb::SessionLane::Control,
        Lane::Query => pb::SessionLane::Query,
        Lane::Execute => pb::SessionLane::Execute,
        Lane::Generate => pb::SessionLane::Generate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_round_trip_and_unset_or_unknown_values_are_refused() {
        for l in [Lane::Control, Lane::Query, Lane::Execute, Lane::Generate] {
            assert_eq!(lane("lane", pb_lane(l) as i32).unwrap(), l);
        }
        let unset = lane("lane", 0).unwrap_err();
        assert_eq!(unset.code(), tonic::Code::InvalidArgument);
        assert!(unset.message().starts_with("lane:"), "{unset:?}");
        assert!(
            lane("yolo_lanes[1]", 42)
                .unwrap_err()
                .message()
                .contains("42")
        );
        assert!(mode(0).is_err() && mode(9).is_err());
        assert_eq!(mode(2).unwrap(), HandlerMode::External);
    }
}

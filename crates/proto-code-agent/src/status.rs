//! Engine errors as gRPC statuses, and the checks every rpc's input gets.

use gantry_core::EngineError;
use gantry_grpc::clip;
use gantry_types::{ThreadId, TurnFailure};
use tonic::Status;

/// The status a client gets for an engine error: `NOT_FOUND` for unknown
/// things, `INVALID_ARGUMENT` for bad input, `FAILED_PRECONDITION` for a
/// session in the wrong state, `UNAVAILABLE` for what is not reachable.
pub(crate) fn status(error: EngineError) -> Status {
    let message = error.to_string();
    match error {
        // Ids and names come from the client: shown clipped.
        EngineError::ThreadNotFound(id) => {
            Status::not_found(format!("session {} not found", clip(&id.to_string())))
        }
        EngineError::NotFound { what, name } => {
            Status::not_found(format!("{what} `{}` not found", clip(&name)))
        }
        EngineError::TurnNotFound { .. } => Status::not_found(message),
        EngineError::AlreadyExists {
            what: "thread",
            name,
        } => Status::already_exists(format!("session {} already exists", clip(&name))),
        EngineError::AlreadyExists { what, name } => {
            Status::already_exists(format!("{what} `{}` already exists", clip(&name)))
        }
        EngineError::InvalidInput(_) => Status::invalid_argument(message),
        // A destroyed session is gone over this service, as in A3S.
        EngineError::Archived(id) => crate::state::destroyed(&id),
        EngineError::Busy { .. }
        | EngineError::NotSteerable { .. }
        | EngineError::AlreadyResolved { .. }
        | EngineError::Unsupported(_) => Status::failed_precondition(message),
        EngineError::Structured { .. } => Status::aborted(message),
        EngineError::Unavailable(_)
        | EngineError::StoreUnavailable(_)
        | EngineError::ShuttingDown => Status::unavailable(message),
        EngineError::Store(_) => Status::internal(message),
    }
}

/// A required session id.
pub(crate) fn session_id(id: &str) -> Result<ThreadId, Status> {
    let id = id.trim();
    if id.is_empty() {
        return Err(Status::invalid_argument("session_id: required"));
    }
    Ok(ThreadId::from(id))
}

/// A required text field, trimmed.
pub(crate) fn required<'a>(field: &str, value: &'a str) -> Result<&'a str, Status> {
    let value = value.trim();
    if value.is_empty() {
        return Err(Status::invalid_argument(format!("{field}: required")));
    }
    Ok(value)
}

/// The status for a turn that failed: `UNAVAILABLE` when the model server
/// could not be reached, `FAILED_PRECONDITION` when the session has no
/// usable model, `ABORTED` when the model refused to answer, `INTERNAL`
/// otherwise.
pub(crate) fn turn_failed(failure: Option<TurnFailure>, message: &str) -> Status {
    match failure {
        Some(TurnFailure::ModelUnreachable) => Status::unavailable(message.to_owned()),
        Some(TurnFailure::ModelUnusable) => Status::failed_precondition(message.to_owned()),
        Some(TurnFailure::StoreUnavailable) => Status::unavailable(message.to_owned()),
        Some(TurnFailure::ModelRefused) => Status::aborted(message.to_owned()),
        Some(TurnFailure::Other) | None => Status::internal(message.to_owned()),
    }
}

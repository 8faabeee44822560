//! Checkpoints: list a thread's, rewind its workspace to one.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use gantry_core::Rewound;
use gantry_types::ThreadId;
use serde_json::json;

use super::Answer;
use crate::AppState;
use crate::error::{ApiError, ErrorBody, body};
use crate::views::{CheckpointList, CheckpointView, RewindAnswer, RewindRequest, ThreadSummary};

/// A thread's checkpoints, oldest first: one per turn that changed the
/// workspace, taken before its first change.
#[utoipa::path(get, path = "/v1/threads/{id}/checkpoints", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = CheckpointList),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<CheckpointList> {
    let entries = state.engine.threads().checkpoints(&ThreadId(id)).await?;
    Ok(Json(CheckpointList {
        checkpoints: entries.iter().map(CheckpointView::from).collect(),
    }))
}

/// Put the thread's workspace back as it was at a checkpoint; the
/// conversation continues from there in the thread answered.
#[utoipa::path(post, path = "/v1/threads/{id}/rewind", tag = "threads",
    params(("id" = String, Path, description = "Thread id")), request_body = RewindRequest,
    responses((status = 200, body = RewindAnswer),
        (status = 404, description = "No such thread or checkpoint", body = ErrorBody),
        (status = 409, description = "A turn is running, or files changed since the agent's \
            last turn (details.files names them; force to rewind anyway)", body = ErrorBody)))]
pub(crate) async fn rewind(
    State(state): State<AppState>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Answer<RewindAnswer> {
    let req: RewindRequest = body(&bytes)?;
    let rewound = state
        .engine
        .threads()
        .rewind(&ThreadId(id), &req.checkpoint, req.force)
        .await?;
    match rewound {
        Rewound::Done { thread, restored } => Ok(Json(RewindAnswer {
            thread: ThreadSummary::from(thread.as_ref()),
            restored,
        })),
        Rewound::Conflicts(files) => {
            let message = format!(
                "changed since the agent's last turn, not by it: {}; rewind with force to lose them",
                files.join(", ")
            );
            Err(ApiError::conflict(message).with_details(json!({ "files": files })))
        }
    }
}

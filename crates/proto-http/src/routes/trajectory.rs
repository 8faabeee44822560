//! `GET /v1/threads/{id}/trajectory`: the thread as an ATIF trajectory,
//! the format Harbor (Terminal-Bench's harness) records runs in; the
//! mapping is gantry-atif's, the same `gantry threads export` uses.

use axum::Json;
use axum::extract::{Path, State};
use gantry_types::ThreadId;

use super::Answer;
use crate::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::views::TrajectoryView;

/// The thread's ATIF trajectory: one step per user input, per model
/// round (its text, reasoning, tool calls with their results and exit
/// codes, the round's tokens and cost) and per error, with the totals.
#[utoipa::path(get, path = "/v1/threads/{id}/trajectory", tag = "threads",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = TrajectoryView),
        (status = 404, description = "No such thread", body = ErrorBody),
        (status = 409, description = "The thread has no turn yet", body = ErrorBody)))]
pub(crate) async fn trajectory(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<TrajectoryView> {
    let events = state.engine.threads().events(&ThreadId(id)).await?;
    let price = |model: &str| state.engine.providers().model_info(model).map(|i| i.cost);
    let tools = state.engine.tool_specs();
    let agent = gantry_atif::AgentInfo {
        name: "gantry",
        version: env!("CARGO_PKG_VERSION"),
        tools: Some(&tools),
        price: &price,
    };
    let trajectory =
        gantry_atif::trajectory(&events, &agent).map_err(|e| ApiError::conflict(e.to_string()))?;
    TrajectoryView::try_from(trajectory)
        .map(Json)
        .map_err(|e| ApiError::internal(format!("cannot render the trajectory: {e}")))
}

//! Questions the model asked the user: a thread's requests, and answering
//! one (the first answer wins; later ones are 409).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use gantry_core::projection;
use gantry_types::{ThreadId, UserInputAnswer};

use super::Answer;
use super::threads::required;
use crate::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::views::{AnswerView, UserInputAnswers, UserInputView};

/// Every user-input request a thread's model made, newest first, pending
/// or how it ended.
#[utoipa::path(get, path = "/v1/threads/{id}/user-input", tag = "approvals",
    params(("id" = String, Path, description = "Thread id")),
    responses((status = 200, body = Vec<UserInputView>),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(crate) async fn of_thread(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<Vec<UserInputView>> {
    let view = state.engine.threads().read(&ThreadId(id)).await?;
    Ok(Json(
        projection::user_inputs(&view)
            .map(|r| UserInputView::of(&view.thread.id.0, &r))
            .collect(),
    ))
}

/// Answer a user-input request: each answer names a question by `id`
/// and gives the labels `selected` and/or `text`; the model gets them and
/// its turn goes on.
#[utoipa::path(post, path = "/v1/threads/{id}/user-input/{request_id}", tag = "approvals",
    params(("id" = String, Path, description = "Thread id"),
        ("request_id" = String, Path, description = "The request's id")),
    request_body = UserInputAnswers,
    responses((status = 200, body = UserInputView, description = "Answered, with the answers as recorded"),
        (status = 404, description = "No such thread or request", body = ErrorBody),
        (status = 409, description = "No longer pending: answered, timed out or its turn ended", body = ErrorBody),
        (status = 422, description = "An answer that does not fit its question", body = ErrorBody)))]
pub(crate) async fn answer(
    State(state): State<AppState>,
    Path((id, request_id)): Path<(String, String)>,
    bytes: Bytes,
) -> Answer<UserInputView> {
    let body: UserInputAnswers = required(&bytes)?;
    let thread = ThreadId(id);
    let answers: Vec<UserInputAnswer> = body.answers.into_iter().map(Into::into).collect();
    let recorded = state
        .engine
        .safety()
        .answer_user_input(&thread, &request_id, answers)
        .await
        .map_err(|e| match ApiError::from(e) {
            e if e.mentions("answers[") => e.with_field("answers"),
            e => e,
        })?;
    let view = state.engine.threads().read(&thread).await?;
    let Some(request) = projection::user_inputs(&view).find(|r| r.request_id == request_id) else {
        return Err(ApiError::not_found(format!(
            "thread {thread} asked no user input {request_id}"
        )));
    };
    let mut shown = UserInputView::of(&thread.0, &request);
    // Taken now; the item may still show it pending for a moment.
    shown.state = projection::UserInputState::Answered.name().to_owned();
    shown.answers = Some(recorded.iter().map(AnswerView::from).collect());
    Ok(Json(shown))
}

//! Questions the model asked the user (`request_user_input`) and the
//! answers a client gives, as the API shows and takes them.

use gantry_core::projection::{self, UserInputRequest};
use gantry_types::{ThreadView, UserInputAnswer, UserInputQuestion};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A user-input request: what the model asked, and where it is.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserInputView {
    /// The thread.
    pub thread_id: String,
    /// The id to answer it with.
    pub request_id: String,
    /// The turn that waits on it.
    pub turn_id: String,
    /// The model's tool call that asked.
    pub call_id: String,
    /// The questions, 1 to 3.
    pub questions: Vec<QuestionView>,
    /// How long it waits for an answer, in ms (0: until answered or
    /// interrupted).
    pub timeout_ms: u64,
    /// When it was asked, unix ms.
    pub asked_at: i64,
    /// `pending`, `answered`, `timed_out`, `interrupted` or `abandoned`
    /// (the server stopped while it waited).
    pub state: String,
    /// The answers, once given (a question left out was skipped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answers: Option<Vec<AnswerView>>,
}

/// One question.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuestionView {
    /// Its id, which an answer names.
    pub id: String,
    /// A short title.
    pub header: String,
    /// The question.
    pub question: String,
    /// The suggested answers (none: a typed answer only).
    pub options: Vec<OptionView>,
    /// Whether a typed answer is taken (beside the options).
    pub allow_free_text: bool,
    /// Whether several options may be picked.
    pub multi_select: bool,
}

/// A suggested answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct OptionView {
    /// What the user picks; an answer names it in `selected`.
    pub label: String,
    /// What choosing it means.
    pub description: String,
}

/// The answer to one question: options picked, text typed, or both.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerView {
    /// The question's id.
    pub id: String,
    /// Labels of the options picked (one, unless the question is
    /// multi-select).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selected: Vec<String>,
    /// A typed answer, where the question takes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// `POST /v1/threads/{id}/user-input/{request_id}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserInputAnswers {
    /// One per question answered; a question left out is skipped, and
    /// none at all tells the model the user declined.
    pub answers: Vec<AnswerView>,
}

impl From<&UserInputAnswer> for AnswerView {
    fn from(a: &UserInputAnswer) -> Self {
        Self {
            id: a.id.clone(),
            selected: a.selected.clone(),
            text: a.text.clone(),
        }
    }
}

impl From<AnswerView> for UserInputAnswer {
    fn from(a: AnswerView) -> Self {
        Self {
            id: a.id,
            selected: a.selected,
            text: a.text,
        }
    }
}

impl From<&UserInputQuestion> for QuestionView {
    fn from(q: &UserInputQuestion) -> Self {
        Self {
            id: q.id.clone(),
            header: q.header.clone(),
            question: q.question.clone(),
            options: q
                .options
                .iter()
                .map(|o| OptionView {
                    label: o.label.clone(),
                    description: o.description.clone(),
                })
                .collect(),
            allow_free_text: q.allow_free_text,
            multi_select: q.multi_select,
        }
    }
}

impl UserInputView {
    /// The request `r` of `thread`.
    pub(crate) fn of(thread: &str, r: &UserInputRequest<'_>) -> Self {
        Self {
            thread_id: thread.to_owned(),
            request_id: r.request_id.to_owned(),
            turn_id: r.turn_id.0.clone(),
            call_id: r.call_id.to_owned(),
            questions: r.questions.iter().map(QuestionView::from).collect(),
            timeout_ms: r.timeout_ms,
            asked_at: r.asked_at,
            state: r.state.name().to_owned(),
            answers: r.answers.map(|a| a.iter().map(AnswerView::from).collect()),
        }
    }
}

/// The requests of `view` still waiting for an answer, newest first.
pub(crate) fn pending_user_input(view: &ThreadView) -> Vec<UserInputView> {
    projection::pending_user_inputs(view)
        .map(|r| UserInputView::of(&view.thread.id.0, &r))
        .collect()
}

//! The questions a thread's model asked the user (`request_user_input`),
//! newest first, each pending or how it ended: what a client that connects
//! late (or after a restart) shows and answers.

use gantry_types::{
    ItemId, ItemKind, ItemStatus, ResolvedBy, ThreadView, TurnId, UserInputAnswer,
    UserInputQuestion,
};

/// One user-input request.
#[derive(Debug, Clone, PartialEq)]
pub struct UserInputRequest<'a> {
    /// The id to answer it with.
    pub request_id: &'a str,
    /// The model's tool call that asked it.
    pub call_id: &'a str,
    /// The turn that waits (or waited) on it.
    pub turn_id: &'a TurnId,
    /// Its item.
    pub item_id: &'a ItemId,
    /// The questions, 1 to 3.
    pub questions: &'a [UserInputQuestion],
    /// How long it waits (0: until answered or interrupted).
    pub timeout_ms: u64,
    /// When it was asked (unix ms).
    pub asked_at: i64,
    /// Where it is.
    pub state: UserInputState,
    /// The answers, once given (a question left out was skipped).
    pub answers: Option<&'a [UserInputAnswer]>,
}

/// Where a user-input request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserInputState {
    /// Waiting for an answer.
    Pending,
    /// A client answered it.
    Answered,
    /// Nobody answered in time; the model was told so.
    TimedOut,
    /// Its turn was interrupted while it waited.
    Interrupted,
    /// The process stopped while it waited; the restart closed it.
    Abandoned,
}

impl UserInputState {
    /// Its name: `pending`, `answered`, `timed_out`, `interrupted`,
    /// `abandoned`.
    pub fn name(self) -> &'static str {
        match self {
            UserInputState::Pending => "pending",
            UserInputState::Answered => "answered",
            UserInputState::TimedOut => "timed_out",
            UserInputState::Interrupted => "interrupted",
            UserInputState::Abandoned => "abandoned",
        }
    }

    /// How it ended, as a sentence's end ("... it was answered").
    pub(crate) fn describe(self) -> &'static str {
        match self {
            // Resolved, but its item not completed yet.
            UserInputState::Pending => "was already resolved",
            UserInputState::Answered => "was already answered",
            UserInputState::TimedOut => "timed out",
            UserInputState::Interrupted => "was cancelled when its turn was interrupted",
            UserInputState::Abandoned => "was closed by a restart",
        }
    }
}

/// Every user-input request of `view`, newest first.
pub fn user_inputs(view: &ThreadView) -> impl Iterator<Item = UserInputRequest<'_>> {
    let items = view.turns.iter().rev().flat_map(|t| t.items.iter().rev());
    items.filter_map(|item| {
        let ItemKind::UserInput {
            request_id,
            call_id,
            questions,
            timeout_ms,
            answers,
            resolved_by,
        } = &item.kind
        else {
            return None;
        };
        let state = match (item.status, resolved_by) {
            (ItemStatus::InProgress, _) => UserInputState::Pending,
            (_, Some(ResolvedBy::Client)) => UserInputState::Answered,
            (_, Some(ResolvedBy::Timeout)) => UserInputState::TimedOut,
            (_, Some(ResolvedBy::Interrupt)) => UserInputState::Interrupted,
            (_, None) => UserInputState::Abandoned,
        };
        Some(UserInputRequest {
            request_id,
            call_id,
            turn_id: &item.turn_id,
            item_id: &item.id,
            questions,
            timeout_ms: *timeout_ms,
            asked_at: item.started_at,
            state,
            answers: answers.as_deref(),
        })
    })
}

/// The requests of `view` still waiting for an answer, newest first.
pub fn pending_user_inputs(view: &ThreadView) -> impl Iterator<Item = UserInputRequest<'_>> {
    user_inputs(view).filter(|r| r.state == UserInputState::Pending)
}

//! What a generation request asks: the session, ready for a turn, and the
//! user's message.

use gantry_types::ThreadId;
use tonic::Status;

use crate::pb;
use crate::state::Ctx;
use crate::status::session_id;

/// The session of a generation request and the seq its next event will
/// have, refused unless it can run a turn: `FAILED_PRECONDITION` when
/// destroyed, paused or busy.
pub(super) async fn ready_session(ctx: &Ctx, id: &str) -> Result<(ThreadId, u64), Status> {
    let id = session_id(id)?;
    let view = ctx.live_session(&id).await?;
    if view.thread.paused {
        return Err(Status::failed_precondition(format!(
            "session {id} is paused; call Resume before generating"
        )));
    }
    if let Some(turn) = view.running_turn() {
        return Err(Status::failed_precondition(format!(
            "session {id} is busy with turn {}; wait for it or Cancel it",
            turn.turn.id
        )));
    }
    Ok((id, view.thread.last_seq + 1))
}

/// The user's message: the trailing user messages of the request, joined.
/// Earlier messages are already in the session's history (clients that
/// resend the conversation would otherwise duplicate it).
pub(super) fn prompt(messages: &[pb::Message]) -> Result<String, Status> {
    let is_user = |m: &&pb::Message| {
        let role = m.role.trim();
        role.is_empty() || role.eq_ignore_ascii_case("user")
    };
    let trailing: Vec<&str> = messages
        .iter()
        .rev()
        .take_while(is_user)
        .map(|m| m.content.as_str())
        .collect();
    if trailing.is_empty() {
        return Err(Status::invalid_argument(
            "messages: the last message must be a user message",
        ));
    }
    let text: Vec<&str> = trailing.into_iter().rev().collect();
    let text = text.join("\n\n");
    if text.trim().is_empty() {
        return Err(Status::invalid_argument(
            "messages: the user message is empty",
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(role: &str, content: &str) -> pb::Message {
        pb::Message {
            role: role.into(),
            content: content.into(),
            metadata: Default::default(),
        }
    }

    #[test]
    fn the_prompt_is_the_trailing_user_messages() {
        let history = [
            m("user", "old"),
            m("assistant", "reply"),
            m("user", "a"),
            m("", "b"),
        ];
        assert_eq!(prompt(&history).unwrap(), "a\n\nb");
        assert!(prompt(&[]).is_err());
        assert!(prompt(&[m("user", "x"), m("assistant", "y")]).is_err());
        assert!(prompt(&[m("user", "  ")]).is_err());
    }
}

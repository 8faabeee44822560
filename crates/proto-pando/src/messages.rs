//! A session's messages as Pando shows them: the projection's
//! conversation, user and assistant messages only (a round's tool results
//! are the model's input, not a message Pando lists), each as its text.

use gantry_core::projection::{Message, Part, Role, conversation};
use gantry_types::ThreadView;

use crate::time::rfc3339_ms;
use crate::wire::MessagePayload;

/// The text of a message: its text parts, else what tools it called.
pub(crate) fn content_of(parts: &[Part]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    if !texts.is_empty() {
        return texts.join("\n\n");
    }
    let tools: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolUse { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    if tools.is_empty() {
        String::new()
    } else {
        format!("[tool calls: {}]", tools.join(", "))
    }
}

/// `user` or `assistant`, for the messages Pando lists.
fn role_name(role: &Role) -> Option<&'static str> {
    match role {
        Role::User => Some("user"),
        Role::Assistant => Some("assistant"),
        Role::ToolResults | Role::CompactionSummary { .. } => None,
    }
}

fn payload(message: &Message) -> Option<MessagePayload> {
    Some(MessagePayload {
        id: message.item_id.0.clone(),
        role: role_name(&message.role)?.to_owned(),
        content: content_of(&message.parts),
        created_at: rfc3339_ms(message.at),
    })
}

/// `message.list` of a session.
pub(crate) fn messages(view: &ThreadView) -> Vec<MessagePayload> {
    conversation(view).iter().filter_map(payload).collect()
}

/// How many messages `message.list` gives.
pub(crate) fn message_count(view: &ThreadView) -> i64 {
    let n = conversation(view)
        .iter()
        .filter(|m| role_name(&m.role).is_some())
        .count();
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_the_text_else_the_tools_called() {
        let text = Part::Text("hello".into());
        let tool = Part::ToolUse {
            call_id: "c1".into(),
            name: "shell".into(),
            arguments: "{}".into(),
        };
        assert_eq!(content_of(&[text.clone(), tool.clone()]), "hello");
        assert_eq!(
            content_of(&[tool.clone(), tool]),
            "[tool calls: shell, shell]"
        );
        assert_eq!(content_of(&[]), "");
    }
}

//! Asking the user: the questions the model puts with its
//! `request_user_input` tool, the answers a client gives, and the thread's
//! setting of whether the model may ask and how long a request waits.
//!
//! The shapes are those of CodeWhale 0.10's `UserInputQuestionEvent` and
//! `UserInputOptionEvent` (codex's `requestUserInput` and Claude Code's
//! AskUserQuestion put the same), so an adapter maps them one to one.

use serde::{Deserialize, Serialize};

/// Most questions one request may ask.
pub const MAX_QUESTIONS: usize = 3;
/// Fewest options a question with options offers.
pub const MIN_OPTIONS: usize = 2;
/// Most options a question offers.
pub const MAX_OPTIONS: usize = 4;
/// Longest question id, in characters.
pub const MAX_ID_CHARS: usize = 64;
/// Longest header, in characters.
pub const MAX_HEADER_CHARS: usize = 60;
/// Longest question text, in characters.
pub const MAX_QUESTION_CHARS: usize = 1_000;
/// Longest option label, in characters.
pub const MAX_LABEL_CHARS: usize = 80;
/// Longest option description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 300;
/// Longest free-text answer, in characters.
pub const MAX_ANSWER_CHARS: usize = 4_000;
/// The label a client shows for the free-text answer (CodeWhale's
/// `UserInputAnswerEvent.label` of a typed answer); no option may take it
/// where free text is allowed, so the two never mix up.
pub const OTHER_LABEL: &str = "Other";

/// How long a request waits for its answer by default: 5 min (CodeWhale's
/// `user_input_timeout_seconds` default).
pub const DEFAULT_USER_INPUT_TIMEOUT_MS: u64 = 300_000;

/// One question the model asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserInputQuestion {
    /// Stable id the answer names (letters, digits, `_`, `-`; unique in
    /// the request).
    pub id: String,
    /// A short title shown above the question.
    pub header: String,
    /// The question itself.
    pub question: String,
    /// The suggested answers: none (free text only) or 2 to 4.
    #[serde(default)]
    pub options: Vec<UserInputOption>,
    /// Whether the user may type an answer of their own (always true for a
    /// question without options).
    #[serde(default)]
    pub allow_free_text: bool,
    /// Whether the user may pick more than one option.
    #[serde(default)]
    pub multi_select: bool,
}

/// An answer the model suggests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserInputOption {
    /// Its label: what the user picks and what the answer names.
    pub label: String,
    /// What choosing it means.
    #[serde(default)]
    pub description: String,
}

/// The user's answer to one question.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserInputAnswer {
    /// The question's id.
    pub id: String,
    /// The labels of the options picked (at most one unless the question
    /// is multi-select).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selected: Vec<String>,
    /// What the user typed, where the question allows free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Whether the model is offered `request_user_input`. Who can answer is
/// known where a thread is made, so the adapter that makes it says: the
/// engine's default is `never` (a protocol with no frame for questions
/// never makes its model wait on nobody).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserInputOffer {
    /// Never: nobody can answer (the default).
    #[default]
    Never,
    /// When someone is there to answer: the approval policy asks a human
    /// (anything but `never`).
    Auto,
    /// Always (a client answers questions even though it approves nothing).
    Always,
}

/// A thread's setting for questions to the user (part of its policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UserInputPolicy {
    /// Whether the model may ask.
    pub offer: UserInputOffer,
    /// How long a request waits for its answer; 0 waits until it is
    /// answered or the turn is interrupted.
    pub timeout_ms: u64,
}

impl Default for UserInputPolicy {
    fn default() -> Self {
        Self {
            offer: UserInputOffer::Never,
            timeout_ms: DEFAULT_USER_INPUT_TIMEOUT_MS,
        }
    }
}

impl UserInputPolicy {
    /// Whether it is the default (left out of the stored policy, so logs
    /// written before it existed read and write unchanged).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_question_reads_the_codewhale_shape() {
        let q: UserInputQuestion = serde_json::from_value(json!({
            "header": "Database", "id": "db", "question": "Which one?",
            "options": [{"label": "PostgreSQL", "description": "server"},
                        {"label": "SQLite", "description": "file"}],
            "allow_free_text": true
        }))
        .unwrap();
        assert_eq!(q.options.len(), 2);
        assert!(q.allow_free_text && !q.multi_select);
    }

    #[test]
    fn the_policy_reads_snake_case_and_defaults() {
        let p: UserInputPolicy = serde_json::from_value(json!({"offer": "always"})).unwrap();
        assert_eq!(p.offer, UserInputOffer::Always);
        assert_eq!(p.timeout_ms, DEFAULT_USER_INPUT_TIMEOUT_MS);
        assert!(UserInputPolicy::default().is_default());
    }

    #[test]
    fn an_answer_leaves_out_what_it_lacks() {
        let a = UserInputAnswer {
            id: "db".into(),
            selected: vec!["SQLite".into()],
            text: None,
        };
        assert_eq!(
            serde_json::to_value(a).unwrap(),
            json!({"id": "db", "selected": ["SQLite"]})
        );
    }
}

//! Asking the user: the `request_user_input` tool, with which the model
//! asks 1 to 3 structured questions and waits for the answers (codex's
//! `requestUserInput`, Claude Code's AskUserQuestion).
//!
//! The turn loop runs it (`turn/ask_user.rs`), not the tool itself: the
//! call waits on the thread's actor like an approval does (held, answered
//! first by a client, its timeout or an interrupt). This module is what
//! the loop and the actor share: whether the tool is offered, its spec,
//! the model's questions checked (`questions.rs`), a client's answers
//! checked and what the model is told (`answers.rs`).

mod answers;
mod questions;

pub(crate) use answers::{check_answers, outcome_for_model};
pub(crate) use questions::parse_questions;

use async_trait::async_trait;
use gantry_tools::{Tool, ToolContext, ToolOutput, ToolStatus};
use gantry_types::user_input::{MAX_OPTIONS, MAX_QUESTIONS, MIN_OPTIONS};
use gantry_types::{ApprovalPolicy, ItemKind, ThreadPolicy, ToolSpec, UserInputOffer};
use serde_json::{Value, json};

/// The tool's name.
pub const REQUEST_USER_INPUT: &str = "request_user_input";

/// Said to the model when a call comes where nobody can answer (the
/// thread's setting changed since the turn started).
pub(crate) const NOBODY_TO_ASK: &str = "nobody can answer questions in this thread right now \
(it is unattended); do not ask again in this turn: decide yourself, and say in your answer what \
you assumed";

/// Whether a turn under `policy` is offered the tool. An unattended turn
/// (a scheduled job's, `unattended`) never is; otherwise the thread's
/// `user_input.offer` says: `never` (the default), `always`, or `auto`:
/// when the approval policy asks a human (its `never` means nobody is
/// there to ask).
pub(crate) fn offered(policy: &ThreadPolicy, unattended: bool) -> bool {
    if unattended {
        return false;
    }
    match policy.user_input.offer {
        UserInputOffer::Always => true,
        UserInputOffer::Never => false,
        UserInputOffer::Auto => policy.approval != ApprovalPolicy::Never,
    }
}

/// The tool as the registry holds it: its spec for the model and the item
/// a call starts as. The turn loop takes its calls before they would run,
/// so `run` only answers a call that reached it by mistake.
pub(crate) struct RequestUserInputTool;

#[async_trait]
impl Tool for RequestUserInputTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: REQUEST_USER_INPUT.to_owned(),
            description: format!(
                "Ask the user 1 to {MAX_QUESTIONS} questions and wait for the answers. Use it \
                 when a choice only the user can make blocks the work (which of two designs, a \
                 name, whether to go on), not for what you can find out yourself. Each question \
                 has a short header, the question, and either {MIN_OPTIONS} to {MAX_OPTIONS} \
                 options (label and description) or none for a typed answer; allow_free_text \
                 lets the user type an answer beside the options (an `Other` option is added \
                 for it: do not add one), multi_select lets them pick several. The result \
                 lists each answer by question id; if nobody answers in time, it says so: then \
                 go on with your best judgment."
            ),
            parameters: parameters(),
        }
    }

    fn start_item(&self, args: &Value, _ctx: &ToolContext) -> ItemKind {
        ItemKind::ToolCall {
            name: REQUEST_USER_INPUT.to_owned(),
            arguments: args.clone(),
            result: None,
            error: None,
        }
    }

    fn has_side_effects(&self) -> bool {
        false
    }

    async fn run(&self, args: Value, _ctx: ToolContext) -> ToolOutput {
        ToolOutput {
            status: ToolStatus::Error,
            model_output: "error: request_user_input cannot run here".to_owned(),
            item: self.start_item(&args, &ToolContext::new(std::path::PathBuf::new())),
        }
    }
}

/// The arguments' JSON Schema.
fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_QUESTIONS,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "Stable id the answer names: letters, digits, _ and -; unique in this call."},
                        "header": {"type": "string", "description": "A short title, a few words."},
                        "question": {"type": "string", "description": "The question, complete and clear on its own."},
                        "options": {
                            "type": "array",
                            "minItems": MIN_OPTIONS,
                            "maxItems": MAX_OPTIONS,
                            "description": "The suggested answers; leave out for a typed answer only.",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {"type": "string", "description": "What the user picks, a few words."},
                                    "description": {"type": "string", "description": "What choosing it means."}
                                },
                                "required": ["label", "description"]
                            }
                        },
                        "allow_free_text": {"type": "boolean", "description": "The user may type an answer of their own (default false; always true without options)."},
                        "multi_select": {"type": "boolean", "description": "The user may pick several options (default false)."}
                    },
                    "required": ["id", "header", "question"]
                }
            }
        },
        "required": ["questions"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_offers_the_tool_only_where_a_human_is_asked() {
        let mut policy = ThreadPolicy {
            approval: ApprovalPolicy::OnRequest,
            ..ThreadPolicy::default()
        };
        assert!(!offered(&policy, false), "never, unless the thread says");
        policy.user_input.offer = UserInputOffer::Auto;
        assert!(offered(&policy, false));
        policy.approval = ApprovalPolicy::Never;
        assert!(!offered(&policy, false), "approval never: nobody is there");
        policy.approval = ApprovalPolicy::OnRequest;
        assert!(!offered(&policy, true), "a scheduled job's turn");
        policy.user_input.offer = UserInputOffer::Never;
        assert!(!offered(&policy, false));
        policy.approval = ApprovalPolicy::Never;
        policy.user_input.offer = UserInputOffer::Always;
        assert!(offered(&policy, false));
    }
}

//! What the model is asked for when it plans, extracts a goal, or checks
//! one: the JSON Schemas of its `submit_output` submissions, the
//! instructions, and the turn inputs. The engine API is in
//! `structured_api.rs`.

use gantry_types::AgentGoal;
use serde_json::{Value, json};

/// Instructions of a planning turn.
pub(crate) const PLAN_INSTRUCTIONS: &str = "Make an execution plan for the task in the user's \
message. Give the goal, then the steps in a workable order: each with a short unique id, what it \
does, the main tool it uses if any, the ids of the steps it depends on, and how to tell it is \
done. Rate the task's complexity, list the tools it needs, and estimate the number of steps. \
Plan only: do not carry the task out.";

/// Instructions of a goal-extraction turn.
pub(crate) const EXTRACT_GOAL_INSTRUCTIONS: &str = "Extract the goal of the user's message: one \
sentence saying what is to be achieved, and concrete success criteria someone could check. Do \
not carry the task out.";

/// Instructions of a goal-check turn.
pub(crate) const CHECK_GOAL_INSTRUCTIONS: &str = "Judge whether the goal in the user's message is \
achieved in the current state described there. It is achieved only when every success criterion \
is met. Estimate progress from 0 (nothing done) to 1 (done) and list the criteria not yet met, \
word for word.";

/// What an [`gantry_types::ExecutionPlan`] submission must look like (the
/// id, status and times are the engine's).
pub(crate) fn plan_schema() -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "goal": {"type": "string", "minLength": 1},
            "steps": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "minLength": 1},
                        "description": {"type": "string", "minLength": 1},
                        "tool": {"type": ["string", "null"]},
                        "dependencies": strings,
                        "success_criteria": strings
                    },
                    "required": ["id", "description"]
                }
            },
            "complexity": {"enum": ["simple", "medium", "complex", "very_complex"]},
            "required_tools": strings,
            "estimated_steps": {"type": "integer", "minimum": 0}
        },
        "required": ["goal", "steps", "complexity"]
    })
}

/// What an extracted goal must look like.
pub(crate) fn goal_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "success_criteria": {
                "type": "array",
                "minItems": 1,
                "items": {"type": "string", "minLength": 1}
            }
        },
        "required": ["description", "success_criteria"]
    })
}

/// What a goal check must look like.
pub(crate) fn goal_check_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "achieved": {"type": "boolean"},
            "progress": {"type": "number", "minimum": 0, "maximum": 1},
            "remaining_criteria": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["achieved", "progress", "remaining_criteria"]
    })
}

/// The input of a planning turn.
pub(crate) fn plan_input(prompt: &str, context: Option<&str>) -> String {
    match context.filter(|c| !c.trim().is_empty()) {
        Some(context) => format!("{prompt}\n\nContext:\n{context}"),
        None => prompt.to_owned(),
    }
}

/// The input of a goal-check turn.
pub(crate) fn check_input(goal: &AgentGoal, current_state: &str) -> String {
    let mut text = format!("Goal: {}\nSuccess criteria:\n", goal.description);
    for criterion in &goal.success_criteria {
        text.push_str(&format!("- {criterion}\n"));
    }
    text.push_str(&format!("\nCurrent state:\n{current_state}"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_compile() {
        for schema in [plan_schema(), goal_schema(), goal_check_schema()] {
            assert!(jsonschema::validator_for(&schema).is_ok(), "{schema}");
        }
    }
}

//! The model's questions, checked: what a `request_user_input` call asks,
//! or every reason it cannot be asked as it is, for the model to fix.

use std::collections::HashSet;

use gantry_types::user_input::{
    MAX_DESCRIPTION_CHARS, MAX_HEADER_CHARS, MAX_ID_CHARS, MAX_LABEL_CHARS, MAX_OPTIONS,
    MAX_QUESTION_CHARS, MAX_QUESTIONS, MIN_OPTIONS, OTHER_LABEL,
};
use gantry_types::{UserInputOption, UserInputQuestion};
use serde::Deserialize;
use serde_json::Value;

/// Problems listed to the model at once; more only add noise.
const MAX_LISTED: usize = 8;

/// A question as the model sent it. Unknown fields are ignored (a model
/// adding `type` should not have to call again); camelCase spellings of
/// the flags are read too, so a flag is never silently lost.
#[derive(Deserialize)]
struct Asked {
    id: String,
    header: String,
    question: String,
    #[serde(default)]
    options: Vec<Offered>,
    #[serde(default, alias = "allowFreeText")]
    allow_free_text: Option<bool>,
    #[serde(default, alias = "multiSelect")]
    multi_select: bool,
}

#[derive(Deserialize)]
struct Offered {
    label: String,
    #[serde(default)]
    description: String,
}

/// The questions of a call's arguments, trimmed; else every problem found,
/// as one message saying how to call again.
pub(crate) fn parse_questions(args: &Value) -> Result<Vec<UserInputQuestion>, String> {
    let mut problems = Vec::new();
    let questions = match args.get("questions") {
        Some(Value::Array(list)) => list,
        Some(_) => return Err(refused(&["`questions` must be an array".to_owned()])),
        None => return Err(refused(&["`questions` is missing".to_owned()])),
    };
    if questions.is_empty() || questions.len() > MAX_QUESTIONS {
        problems.push(format!(
            "ask 1 to {MAX_QUESTIONS} questions, not {}",
            questions.len()
        ));
    }
    let mut ids = HashSet::new();
    let mut out = Vec::new();
    for (i, raw) in questions.iter().enumerate().take(MAX_QUESTIONS) {
        let at = format!("questions[{i}]");
        match serde_json::from_value::<Asked>(raw.clone()) {
            Ok(asked) => {
                let q = check(&at, asked, &mut problems);
                if !q.id.is_empty() && !ids.insert(q.id.clone()) {
                    problems.push(format!("{at}.id: `{}` is used twice", q.id));
                }
                out.push(q);
            }
            Err(e) => problems.push(format!("{at}: {e}")),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(refused(&problems))
    }
}

/// The question, trimmed, with what is wrong with it added to `problems`.
fn check(at: &str, asked: Asked, problems: &mut Vec<String>) -> UserInputQuestion {
    let id = asked.id.trim().to_owned();
    if id.is_empty() || id.chars().count() > MAX_ID_CHARS {
        problems.push(format!("{at}.id: give 1 to {MAX_ID_CHARS} characters"));
    } else if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        problems.push(format!(
            "{at}.id: `{id}` may only hold letters, digits, `_` and `-`"
        ));
    }
    let header = text(at, "header", &asked.header, MAX_HEADER_CHARS, problems);
    let question = text(
        at,
        "question",
        &asked.question,
        MAX_QUESTION_CHARS,
        problems,
    );
    let n = asked.options.len();
    if n != 0 && !(MIN_OPTIONS..=MAX_OPTIONS).contains(&n) {
        problems.push(format!(
            "{at}.options: give {MIN_OPTIONS} to {MAX_OPTIONS} options (or none for a typed answer), not {n}"
        ));
    }
    // Without options the only answer is a typed one.
    let allow_free_text = match (n, asked.allow_free_text) {
        (0, Some(false)) => {
            problems.push(format!(
                "{at}: a question without options needs allow_free_text (or give options)"
            ));
            false
        }
        (0, _) => true,
        (_, flag) => flag.unwrap_or(false),
    };
    if n == 0 && asked.multi_select {
        problems.push(format!("{at}.multi_select: there are no options to pick"));
    }
    let mut labels = HashSet::new();
    let mut options = Vec::with_capacity(n);
    for (j, o) in asked.options.into_iter().enumerate().take(MAX_OPTIONS) {
        let where_ = format!("{at}.options[{j}]");
        let label = text(&where_, "label", &o.label, MAX_LABEL_CHARS, problems);
        if !label.is_empty() && !labels.insert(label.clone()) {
            problems.push(format!("{where_}.label: `{label}` is offered twice"));
        }
        if allow_free_text && label.eq_ignore_ascii_case(OTHER_LABEL) {
            problems.push(format!(
                "{where_}: leave out the `{OTHER_LABEL}` option: allow_free_text adds it"
            ));
        }
        let description = o.description.trim().to_owned();
        if description.chars().count() > MAX_DESCRIPTION_CHARS {
            problems.push(format!(
                "{where_}.description: at most {MAX_DESCRIPTION_CHARS} characters"
            ));
        }
        options.push(UserInputOption { label, description });
    }
    UserInputQuestion {
        id,
        header,
        question,
        options,
        allow_free_text,
        multi_select: asked.multi_select,
    }
}

/// `value` trimmed; a problem when it is empty or longer than `max`.
fn text(at: &str, field: &str, value: &str, max: usize, problems: &mut Vec<String>) -> String {
    let value = value.trim();
    if value.is_empty() {
        problems.push(format!("{at}.{field}: must not be empty"));
    } else if value.chars().count() > max {
        problems.push(format!("{at}.{field}: at most {max} characters"));
    }
    value.to_owned()
}

/// What the model is told: the problems, and to call again.
fn refused(problems: &[String]) -> String {
    let mut listed: Vec<&str> = problems
        .iter()
        .take(MAX_LISTED)
        .map(String::as_str)
        .collect();
    let more = problems.len().saturating_sub(MAX_LISTED);
    let more_note = format!("and {more} more");
    if more > 0 {
        listed.push(&more_note);
    }
    format!(
        "the questions were not asked: {}. Call request_user_input again with the questions fixed.",
        listed.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pick(id: &str) -> Value {
        json!({"id": id, "header": "H", "question": "Q?",
               "options": [{"label": "A", "description": "a"}, {"label": "B", "description": "b"}]})
    }

    #[test]
    fn good_questions_are_trimmed_and_a_question_without_options_takes_text() {
        let qs = parse_questions(&json!({"questions": [
            pick("one"),
            {"id": " two ", "header": " Name ", "question": "What name?"}
        ]}))
        .unwrap();
        assert_eq!(qs[1].id, "two");
        assert_eq!(qs[1].header, "Name");
        assert!(qs[1].allow_free_text && qs[1].options.is_empty());
        assert!(!qs[0].allow_free_text);
    }

    #[test]
    fn every_problem_is_named_for_the_model() {
        let err = parse_questions(&json!({"questions": [
            pick("same"), pick("same"),
            {"id": "x y", "header": "", "question": "Q?",
             "options": [{"label": "only one"}], "multi_select": true},
            pick("four")
        ]}))
        .unwrap_err();
        for part in [
            "ask 1 to 3 questions, not 4",
            "questions[1].id: `same` is used twice",
            "questions[2].id: `x y` may only hold",
            "questions[2].header: must not be empty",
            "questions[2].options: give 2 to 4 options",
            "call request_user_input again",
        ] {
            assert!(
                err.to_lowercase().contains(&part.to_lowercase()),
                "{part}: {err}"
            );
        }
    }

    #[test]
    fn missing_fields_and_a_reserved_label_are_refused() {
        let err =
            parse_questions(&json!({"questions": [{"id": "a", "question": "Q?"}]})).unwrap_err();
        assert!(
            err.contains("questions[0]: missing field `header`"),
            "{err}"
        );
        let err = parse_questions(&json!({"questions": [{
            "id": "a", "header": "H", "question": "Q?", "allow_free_text": true,
            "options": [{"label": "A"}, {"label": "other"}]}]}))
        .unwrap_err();
        assert!(err.contains("leave out the `Other` option"), "{err}");
        assert!(
            parse_questions(&json!({}))
                .unwrap_err()
                .contains("`questions` is missing")
        );
        assert!(parse_questions(&json!({"questions": []})).is_err());
    }
}

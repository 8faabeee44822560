//! A client's answers, checked against the questions they answer, and what
//! the model is told of how its request ended.

use std::collections::HashSet;

use gantry_types::user_input::MAX_ANSWER_CHARS;
use gantry_types::{UserInputAnswer, UserInputQuestion};
use serde_json::{Value, json};

/// The answers as recorded: in question order, text trimmed, a question
/// answered with nothing left out (skipped). An error names the answer and
/// what is wrong, so the client can correct it; nothing is recorded then.
pub(crate) fn check_answers(
    questions: &[UserInputQuestion],
    answers: Vec<UserInputAnswer>,
) -> Result<Vec<UserInputAnswer>, String> {
    let mut seen = HashSet::new();
    let mut checked = Vec::with_capacity(answers.len());
    for (i, mut answer) in answers.into_iter().enumerate() {
        let at = format!("answers[{i}]");
        let Some(q) = questions.iter().find(|q| q.id == answer.id) else {
            let ids: Vec<&str> = questions.iter().map(|q| q.id.as_str()).collect();
            return Err(format!(
                "{at}.id: no question `{}` was asked (the questions: {})",
                answer.id,
                ids.join(", ")
            ));
        };
        if !seen.insert(q.id.as_str()) {
            return Err(format!("{at}.id: question `{}` is answered twice", q.id));
        }
        let mut picked = HashSet::new();
        for label in &answer.selected {
            if !q.options.iter().any(|o| &o.label == label) {
                let labels: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
                return Err(format!(
                    "{at}.selected: `{label}` is not an option of question `{}` (its options: {})",
                    q.id,
                    if labels.is_empty() {
                        "none".to_owned()
                    } else {
                        labels.join(", ")
                    }
                ));
            }
            if !picked.insert(label.as_str()) {
                return Err(format!("{at}.selected: `{label}` is picked twice"));
            }
        }
        if answer.selected.len() > 1 && !q.multi_select {
            return Err(format!(
                "{at}.selected: question `{}` takes one option, not {}",
                q.id,
                answer.selected.len()
            ));
        }
        answer.text = answer
            .text
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty());
        if let Some(text) = &answer.text {
            if !q.allow_free_text {
                return Err(format!(
                    "{at}.text: question `{}` takes one of its options, not a typed answer",
                    q.id
                ));
            }
            if text.chars().count() > MAX_ANSWER_CHARS {
                return Err(format!("{at}.text: at most {MAX_ANSWER_CHARS} characters"));
            }
        }
        if !answer.selected.is_empty() || answer.text.is_some() {
            checked.push(answer);
        }
    }
    checked.sort_by_key(|a| questions.iter().position(|q| q.id == a.id));
    Ok(checked)
}

/// What the model is told: each question with its answer (or that it was
/// skipped), that the user declined them all, or (`None`) that nobody
/// answered in time. JSON, so an answer's own
/// words can never be read as the result's structure.
pub(crate) fn outcome_for_model(
    questions: &[UserInputQuestion],
    answers: Option<&[UserInputAnswer]>,
    timeout_ms: u64,
) -> String {
    let result = match answers {
        Some(answers) if !answers.is_empty() => {
            let each: Vec<Value> = questions
                .iter()
                .map(|q| {
                    let mut entry = json!({"id": q.id, "question": q.question});
                    match answers.iter().find(|a| a.id == q.id) {
                        Some(a) => {
                            if !a.selected.is_empty() {
                                entry["selected"] = json!(a.selected);
                            }
                            if let Some(text) = &a.text {
                                entry["text"] = json!(text);
                            }
                        }
                        None => entry["skipped"] = json!(true),
                    }
                    entry
                })
                .collect();
            json!({"status": "answered", "answers": each})
        }
        Some(_) => json!({
            "status": "declined",
            "note": "The user closed the questions without answering any. Go on with your best \
                     judgment, and say in your answer what you assumed."
        }),
        None => json!({
            "status": "timed_out",
            "note": format!(
                "Nobody answered within {}. Go on without the answers: choose what seems best, \
                 and say in your answer what you assumed.",
                duration(timeout_ms)
            )
        }),
    };
    result.to_string()
}

/// `90 s`, `5 min`.
fn duration(ms: u64) -> String {
    let secs = ms.div_ceil(1000);
    if secs >= 60 && secs.is_multiple_of(60) {
        format!("{} min", secs / 60)
    } else {
        format!("{secs} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_types::UserInputOption;

    fn questions() -> Vec<UserInputQuestion> {
        let option = |l: &str| UserInputOption {
            label: l.into(),
            description: String::new(),
        };
        vec![
            UserInputQuestion {
                id: "db".into(),
                header: "Database".into(),
                question: "Which?".into(),
                options: vec![option("PostgreSQL"), option("SQLite")],
                allow_free_text: true,
                multi_select: false,
            },
            UserInputQuestion {
                id: "os".into(),
                header: "Targets".into(),
                question: "Where?".into(),
                options: vec![option("Linux"), option("macOS")],
                allow_free_text: false,
                multi_select: true,
            },
        ]
    }

    fn answer(id: &str, selected: &[&str], text: Option<&str>) -> UserInputAnswer {
        UserInputAnswer {
            id: id.into(),
            selected: selected.iter().map(|s| (*s).to_owned()).collect(),
            text: text.map(str::to_owned),
        }
    }

    #[test]
    fn answers_are_ordered_trimmed_and_empty_ones_dropped() {
        let got = check_answers(
            &questions(),
            vec![
                answer("os", &["Linux", "macOS"], None),
                answer("db", &[], Some("  DuckDB ")),
            ],
        )
        .unwrap();
        assert_eq!(got[0], answer("db", &[], Some("DuckDB")));
        assert_eq!(got[1].selected, ["Linux", "macOS"]);
        let skipped = check_answers(&questions(), vec![answer("db", &[], Some("  "))]).unwrap();
        assert!(skipped.is_empty());
    }

    #[test]
    fn a_bad_answer_says_what_to_fix() {
        let cases = [
            (answer("nope", &[], None), "no question `nope`"),
            (answer("db", &["MySQL"], None), "`MySQL` is not an option"),
            (
                answer("db", &["PostgreSQL", "SQLite"], None),
                "takes one option",
            ),
            (answer("os", &[], Some("BSD")), "not a typed answer"),
        ];
        for (bad, says) in cases {
            let err = check_answers(&questions(), vec![bad]).unwrap_err();
            assert!(err.contains(says), "{says}: {err}");
        }
        let twice = vec![
            answer("db", &["SQLite"], None),
            answer("db", &["SQLite"], None),
        ];
        assert!(
            check_answers(&questions(), twice)
                .unwrap_err()
                .contains("answered twice")
        );
    }

    #[test]
    fn the_model_hears_each_answer_or_that_nobody_answered() {
        let qs = questions();
        let answered = [answer("db", &["SQLite"], None)];
        let told: Value =
            serde_json::from_str(&outcome_for_model(&qs, Some(&answered), 0)).unwrap();
        assert_eq!(told["status"], "answered");
        assert_eq!(told["answers"][0]["selected"], json!(["SQLite"]));
        assert_eq!(told["answers"][1]["skipped"], true);
        let told = outcome_for_model(&qs, None, 300_000);
        assert!(
            told.contains("timed_out") && told.contains("within 5 min"),
            "{told}"
        );
        let told = outcome_for_model(&qs, Some(&[]), 0);
        assert!(told.contains("declined"), "{told}");
    }
}

//! Questions the model asks the user (`request_user_input`) as a form
//! elicitation (`elicitation/create`, form mode, tied to the session and
//! the tool call), for a client that advertises
//! `clientCapabilities.elicitation.form`: each question a field (one option
//! as a `oneOf` string, several as an array of titled options, a typed
//! answer as a string), free text beside options as a second field,
//! `<id>.other`. `accept` answers with what was filled; `decline` and
//! `cancel` answer nothing (the model hears the user declined). A client
//! without form elicitation is never asked: its threads are not offered
//! the tool.

use std::sync::Arc;

use gantry_types::user_input::{MAX_ANSWER_CHARS, OTHER_LABEL};
use gantry_types::{UserInputAnswer, UserInputOffer, UserInputPolicy, UserInputQuestion};
use serde_json::{Map, Value};

use super::modes::ASK_TIMEOUT_MS;
use super::{Agent, Session};
use crate::wire::{
    ClientCapabilities, CreateElicitationRequest, CreateElicitationResponse, ElicitationProperty,
    ElicitationSchema, EnumOption, Properties, TitledItems,
};

/// The suffix of a question's free-text field beside its options (ids
/// hold no `.`, so it never names another question).
const OTHER_SUFFIX: &str = ".other";

/// Questions to the user in threads this client drives: offered when it
/// renders forms (whatever the mode: a question is not a permission), and
/// waiting as long as a permission request does; never otherwise, since
/// nobody else can answer while `gantry acp` holds the data dir.
pub(crate) fn user_input_policy(caps: &ClientCapabilities) -> UserInputPolicy {
    UserInputPolicy {
        offer: if caps.elicits_forms() {
            UserInputOffer::Always
        } else {
            UserInputOffer::Never
        },
        timeout_ms: ASK_TIMEOUT_MS,
    }
}

/// Asks the user `questions` and gives the engine the answers.
pub(crate) async fn ask(
    agent: Arc<Agent>,
    session: Arc<Session>,
    request_id: String,
    call_id: String,
    questions: Vec<UserInputQuestion>,
) {
    let params = form(&session.id.0, &call_id, &questions);
    let answer: Result<CreateElicitationResponse, _> =
        agent.peer.request("elicitation/create", params).await;
    let answers = match answer {
        Ok(r) if r.action == "accept" => answers(&questions, &r.content.unwrap_or_default()),
        Ok(r) => {
            tracing::debug!(action = r.action, "the user answered no question");
            Vec::new()
        }
        Err(e) => {
            // Left to the request's timeout (or an interrupt).
            tracing::warn!(error = %e, "elicitation failed; the questions stay pending");
            return;
        }
    };
    // A timeout or a cancel may have answered first: that answer stands.
    if let Err(e) = agent
        .engine
        .safety()
        .answer_user_input(&session.id, &request_id, answers)
        .await
    {
        tracing::debug!(error = %e, request_id, "user input not taken");
    }
}

/// The form of `questions`.
pub(crate) fn form(
    session_id: &str,
    call_id: &str,
    questions: &[UserInputQuestion],
) -> CreateElicitationRequest {
    let mut properties = Vec::new();
    for q in questions {
        let options: Vec<EnumOption> = q
            .options
            .iter()
            .map(|o| EnumOption {
                value: o.label.clone(),
                title: o.label.clone(),
                description: (!o.description.is_empty()).then(|| o.description.clone()),
            })
            .collect();
        let text = |title: String, description: String| ElicitationProperty::String {
            title,
            description,
            one_of: None,
            max_length: u32::try_from(MAX_ANSWER_CHARS).ok(),
        };
        let field = match (options.is_empty(), q.multi_select) {
            (true, _) => text(q.header.clone(), q.question.clone()),
            (false, true) => ElicitationProperty::Array {
                title: q.header.clone(),
                description: q.question.clone(),
                items: TitledItems { any_of: options },
            },
            (false, false) => ElicitationProperty::String {
                title: q.header.clone(),
                description: q.question.clone(),
                one_of: Some(options),
                max_length: None,
            },
        };
        properties.push((q.id.clone(), field));
        if q.allow_free_text && !q.options.is_empty() {
            let other = text(
                format!("{}: {OTHER_LABEL}", q.header),
                "Your own answer, instead of or beside the options".to_owned(),
            );
            properties.push((format!("{}{OTHER_SUFFIX}", q.id), other));
        }
    }
    let message = match questions {
        [one] => one.question.clone(),
        _ => format!("The agent asks {} questions.", questions.len()),
    };
    CreateElicitationRequest {
        session_id: session_id.to_owned(),
        tool_call_id: Some(call_id.to_owned()),
        mode: "form",
        message,
        requested_schema: ElicitationSchema {
            kind: "object",
            properties: Properties(properties),
            required: Vec::new(),
        },
    }
}

/// What the form's `content` answers. Whatever does not fit a question (an
/// unknown option, text where none is taken) is left out rather than
/// refused: the user answered, and the engine records what fits.
pub(crate) fn answers(
    questions: &[UserInputQuestion],
    content: &Map<String, Value>,
) -> Vec<UserInputAnswer> {
    let mut out = Vec::new();
    for q in questions {
        let is_option = |s: &str| q.options.iter().any(|o| o.label == s);
        let mut answer = UserInputAnswer {
            id: q.id.clone(),
            ..UserInputAnswer::default()
        };
        match content.get(&q.id) {
            Some(Value::String(s)) if is_option(s) => answer.selected.push(s.clone()),
            Some(Value::String(s)) if q.options.is_empty() => answer.text = Some(s.clone()),
            Some(Value::Array(picked)) => {
                for label in picked.iter().filter_map(Value::as_str) {
                    if is_option(label) && !answer.selected.iter().any(|l| l == label) {
                        answer.selected.push(label.to_owned());
                    }
                }
                if !q.multi_select {
                    answer.selected.truncate(1);
                }
            }
            _ => {}
        }
        if let Some(Value::String(s)) = content.get(&format!("{}{OTHER_SUFFIX}", q.id))
            && q.allow_free_text
        {
            answer.text = Some(s.clone());
        }
        // Trimmed and cut to what the engine takes, so it is not refused.
        answer.text = answer
            .text
            .map(|t| t.trim().chars().take(MAX_ANSWER_CHARS).collect::<String>())
            .filter(|t| !t.is_empty());
        if !answer.selected.is_empty() || answer.text.is_some() {
            out.push(answer);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_types::UserInputOption;
    use serde_json::json;

    fn questions() -> Vec<UserInputQuestion> {
        let option = |l: &str| UserInputOption {
            label: l.into(),
            description: format!("{l}, described"),
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
            UserInputQuestion {
                id: "name".into(),
                header: "Name".into(),
                question: "What name?".into(),
                options: Vec::new(),
                allow_free_text: true,
                multi_select: false,
            },
        ]
    }

    #[test]
    fn each_question_is_a_field_in_order_with_free_text_beside_options() {
        let form = serde_json::to_value(form("s", "call_1", &questions())).unwrap();
        let props = form["requestedSchema"]["properties"].as_object().unwrap();
        let keys: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 4);
        assert_eq!(props["db"]["oneOf"][1]["const"], "SQLite");
        assert_eq!(props["db.other"]["type"], "string");
        assert_eq!(props["os"]["type"], "array");
        assert_eq!(props["os"]["items"]["anyOf"][0]["title"], "Linux");
        assert_eq!(props["name"]["maxLength"], 4000);
        assert_eq!(form["toolCallId"], "call_1");
        assert_eq!(form["mode"], "form");
        // In question order on the wire (a JSON object's order is the form's).
        let text = serde_json::to_string(&super::form("s", "c", &questions())).unwrap();
        let at = |k: &str| text.find(&format!("\"{k}\"")).unwrap();
        assert!(at("db") < at("db.other") && at("db.other") < at("os") && at("os") < at("name"));
    }

    #[test]
    fn content_becomes_answers_and_what_does_not_fit_is_left_out() {
        let content = json!({
            "db": "SQLite", "db.other": "with WAL",
            "os": ["Linux", "BSD", "Linux"], "name": "  "
        });
        let got = answers(&questions(), content.as_object().unwrap());
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].selected, ["SQLite"]);
        assert_eq!(got[0].text.as_deref(), Some("with WAL"));
        assert_eq!(got[1].selected, ["Linux"]);
        let without = user_input_policy(&ClientCapabilities::default());
        assert_eq!(without.offer, UserInputOffer::Never);
    }
}

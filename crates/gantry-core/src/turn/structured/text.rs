//! A structured turn answered in text: the model writes the JSON itself
//! instead of calling `submit_output` (native structured output answers so,
//! and many models do unasked). A text that parses and matches the schema
//! is the output; any other text is a failed attempt the model is told about.

use gantry_llm::{Message, OutputSchema};
use gantry_types::{DeltaKind, ItemKind, ItemStatus};
use serde_json::Value;

use super::{Loop, SUBMIT_OUTPUT, StructuredSpec};

/// Longest schema name providers accept in `response_format`.
const MAX_NAME: usize = 64;

impl StructuredSpec {
    /// The schema as native structured output asks for it: the tool's
    /// (an object schema, the wrapped one for other schemas), under a name
    /// providers accept.
    pub(crate) fn native(&self) -> OutputSchema {
        let name: String = self
            .name
            .as_deref()
            .unwrap_or("output")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(MAX_NAME)
            .collect();
        OutputSchema {
            name: if name.is_empty() {
                "output".into()
            } else {
                name
            },
            schema: self.tool.parameters.clone(),
        }
    }

    /// The payload of a text answer, or what is wrong with it, for the model.
    pub(super) fn check_text(&self, text: &str) -> Result<Value, String> {
        let json = unfenced(text);
        if json.is_empty() {
            return Err(format!(
                "the answer was empty; answer with the JSON output alone, or call {SUBMIT_OUTPUT} with it"
            ));
        }
        let value: Value = serde_json::from_str(json).map_err(|e| {
            format!(
                "the text answer is not valid JSON ({e}); answer with the JSON output alone, or call {SUBMIT_OUTPUT} with it"
            )
        })?;
        // A wrapped schema's native form is `{"output": ...}`; the bare
        // payload is accepted too.
        let payload = match &value {
            Value::Object(o) if self.wrapped && o.len() == 1 && o.contains_key("output") => {
                o["output"].clone()
            }
            _ => value,
        };
        match self.mismatch(&payload) {
            None => Ok(payload),
            Some(problem) => Err(format!(
                "{problem}\nFix these and answer again with the JSON output alone, or call {SUBMIT_OUTPUT} with it."
            )),
        }
    }
}

/// The JSON of an answer: the text trimmed, or the inside of the code fence
/// it is wholly wrapped in (```json ... ```).
fn unfenced(text: &str) -> &str {
    let text = text.trim();
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(inner) = rest.strip_suffix("```") else {
        return text;
    };
    // The fence's first line names the language, if anything.
    match inner.split_once('\n') {
        Some((_, body)) => body.trim(),
        None => inner.trim(),
    }
}

impl Loop<'_> {
    /// Judges the round's text answer: a valid one becomes the turn's
    /// `structured_output` item (its text stays the assistant's answer in
    /// the history: no tool call was made); an invalid one is answered with
    /// a reminder while retries remain. `Err` holds the problem.
    pub(super) async fn judge_text(
        &mut self,
        spec: &StructuredSpec,
        remind: bool,
    ) -> Result<(), String> {
        let text = match self.messages.last() {
            Some(Message::Assistant { text, .. }) => text.clone(),
            _ => String::new(),
        };
        match spec.check_text(&text) {
            Ok(payload) => {
                let mut item = self.em.new_item(
                    self.rounds,
                    ItemKind::StructuredOutput {
                        schema_name: spec.name.clone(),
                        payload: Value::Null,
                    },
                );
                self.em.announce(&item).await;
                self.em
                    .delta(&item.id, DeltaKind::StructuredOutput(payload.to_string()))
                    .await;
                item.kind = ItemKind::StructuredOutput {
                    schema_name: spec.name.clone(),
                    payload,
                };
                self.em.complete_item(item, ItemStatus::Completed).await;
                Ok(())
            }
            Err(problem) => {
                // The reminder is a user message (and item) so the rebuilt
                // history matches.
                if remind {
                    let text = format!("Your answer was not accepted: {problem}");
                    self.em
                        .user_item(self.rounds, text.clone(), None, Vec::new())
                        .await;
                    self.messages.push(Message::user(text));
                }
                Err(problem)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::unfenced;

    #[test]
    fn a_fenced_answer_is_read_inside_its_fence() {
        assert_eq!(unfenced(" {\"a\": 1} \n"), "{\"a\": 1}");
        assert_eq!(unfenced("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(unfenced("```\n[1]\n```"), "[1]");
        assert_eq!(unfenced("```{\"a\": 1}```"), "{\"a\": 1}");
        assert_eq!(unfenced("here: ```[1]```"), "here: ```[1]```");
    }
}

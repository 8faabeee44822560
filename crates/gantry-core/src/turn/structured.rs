//! Structured output: a turn whose only tool is `submit_output`, with the
//! caller's JSON Schema as its input schema. Each submission is validated;
//! an invalid one goes back to the model as a tool error listing what
//! failed, until the retry limit; the first valid one becomes a
//! `structured_output` item and ends the turn. A text answer holding the
//! JSON alone counts as a submission too (`text.rs`), and providers with
//! native structured output are asked for it.

use gantry_llm::{Message, ToolCall, Tools};
use gantry_types::{DeltaKind, ItemKind, ItemStatus, ToolCallOrigin, ToolSpec, TurnFailure};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::{Loop, Outcome, StreamedTool};
use crate::engine::Input;

mod text;

/// The name of the tool the model submits its output with.
pub(crate) const SUBMIT_OUTPUT: &str = "submit_output";

/// Most validation errors listed to the model at once; more only add noise.
const MAX_LISTED_ERRORS: usize = 20;

/// Told to the model in a structured turn, after the thread's instructions.
const STRUCTURED_NOTE: &str = "Answer by calling the submit_output tool exactly once, with \
arguments that match its input schema, or answer with that JSON alone and nothing else. Any \
other text is not accepted. If an answer is rejected, read the listed errors and answer again \
with a corrected submission.";

/// What a structured turn asks for.
pub(crate) struct StructuredSpec {
    /// The schema's name, carried to the `structured_output` item.
    pub name: Option<String>,
    /// Instructions for this kind of output (planning, goal extraction...).
    pub instructions: Option<String>,
    /// Invalid submissions answered with their errors before the turn fails.
    pub retries: u32,
    /// The compiled schema.
    validator: jsonschema::Validator,
    /// The schema is not an object schema, so the model submits
    /// `{"output": ...}` (tool arguments must be an object).
    wrapped: bool,
    /// The tool as the model sees it.
    tool: ToolSpec,
}

impl StructuredSpec {
    /// Compiles `schema`; a one-line reason when it is not a usable JSON Schema.
    pub(crate) fn new(
        schema: &Value,
        name: Option<String>,
        instructions: Option<String>,
        retries: u32,
    ) -> Result<Self, String> {
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| format!("the output schema is not a valid JSON Schema: {e}"))?;
        let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
        let parameters = if is_object {
            schema.clone()
        } else {
            wrap(schema)
        };
        let what = name
            .as_deref()
            .map_or_else(String::new, |n| format!(" ({n})"));
        let shape = if is_object {
            "The arguments are the output itself"
        } else {
            "Put the output in the `output` argument"
        };
        let tool = ToolSpec {
            name: SUBMIT_OUTPUT.to_owned(),
            description: format!(
                "Submit your final answer{what} as structured output. {shape}; it must match the input schema. Invalid submissions are answered with the errors to fix."
            ),
            parameters,
        };
        Ok(Self {
            name,
            instructions,
            retries,
            validator,
            wrapped: !is_object,
            tool,
        })
    }

    /// The request's instructions: the thread's, this output's, and how to answer.
    fn request_instructions(&self, thread: Option<&str>) -> String {
        [thread, self.instructions.as_deref(), Some(STRUCTURED_NOTE)]
            .into_iter()
            .flatten()
            .filter(|s| !s.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// The payload of a submission, or what is wrong with it, for the model.
    fn check(&self, call: &ToolCall) -> Result<(Value, Value), (Value, String)> {
        let raw = || Value::String(call.arguments.clone());
        if call.name != SUBMIT_OUTPUT {
            return Err((
                raw(),
                format!(
                    "unknown tool {:?}; only {SUBMIT_OUTPUT} is available: call it with your answer",
                    call.name
                ),
            ));
        }
        let args: Value = serde_json::from_str(&call.arguments).map_err(|e| {
            (
                raw(),
                format!(
                    "arguments are not valid JSON ({e}); call {SUBMIT_OUTPUT} again with valid JSON"
                ),
            )
        })?;
        let payload = if self.wrapped {
            match args.get("output") {
                Some(p) => p.clone(),
                None => {
                    return Err((
                        args,
                        "the `output` argument is missing; put your answer in it".to_owned(),
                    ));
                }
            }
        } else {
            args.clone()
        };
        match self.mismatch(&payload) {
            None => Ok((args, payload)),
            Some(problem) => Err((
                args,
                format!("{problem}\nFix these and call {SUBMIT_OUTPUT} again."),
            )),
        }
    }

    /// What in `payload` does not match the schema, listed for the model;
    /// `None` when it matches.
    fn mismatch(&self, payload: &Value) -> Option<String> {
        let errors: Vec<String> = self
            .validator
            .iter_errors(payload)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() {
                    "(root)".to_owned()
                } else {
                    at
                };
                format!("- at {at}: {e}")
            })
            .collect();
        if errors.is_empty() {
            return None;
        }
        let more = errors.len().saturating_sub(MAX_LISTED_ERRORS);
        let mut message = format!(
            "the submission does not match the output schema ({} error{}):\n{}",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" },
            errors[..errors.len().min(MAX_LISTED_ERRORS)].join("\n")
        );
        if more > 0 {
            message.push_str(&format!("\n- ... and {more} more"));
        }
        Some(message)
    }
}

/// An object schema holding `schema` in its `output` property. Definitions
/// move to the root so `#/$defs/...` references still resolve.
fn wrap(schema: &Value) -> Value {
    let mut inner = schema.clone();
    let mut root = Map::new();
    if let Value::Object(obj) = &mut inner {
        for key in ["$defs", "definitions"] {
            if let Some(defs) = obj.remove(key) {
                root.insert(key.to_owned(), defs);
            }
        }
    }
    root.insert("type".to_owned(), json!("object"));
    root.insert("properties".to_owned(), json!({ "output": inner }));
    root.insert("required".to_owned(), json!(["output"]));
    Value::Object(root)
}

impl Loop<'_> {
    /// The structured turn: ask, validate, answer errors, until a valid
    /// submission, the retry limit, the round limit, or an interrupt.
    pub(super) async fn structured(
        &mut self,
        spec: &StructuredSpec,
        steer: &mut mpsc::Receiver<Input>,
    ) -> Outcome {
        let client = match self.spec.client(self.shared) {
            Ok(c) => c,
            Err(reason) => return Outcome::Failed(TurnFailure::ModelUnusable, reason),
        };
        let tools: Tools = vec![spec.tool.clone()].into();
        self.output_schema = Some(spec.native());
        let instructions = spec.request_instructions(self.spec.instructions.as_deref());
        // Submissions stream as partial JSON. A wrapped schema's would show
        // the `{"output": ...}` envelope, so its payload is sent whole instead.
        if !spec.wrapped {
            self.streamed_tool = Some(StreamedTool {
                name: SUBMIT_OUTPUT.to_owned(),
                kind: ItemKind::StructuredOutput {
                    schema_name: spec.name.clone(),
                    payload: Value::Null,
                },
            });
        }
        let max_rounds = self.shared.config.max_rounds;
        let mut invalid = 0u32;
        let mut last_problem = String::new();
        loop {
            if self.rounds >= max_rounds {
                return Outcome::Failed(
                    TurnFailure::Other,
                    format!(
                        "stopped after {max_rounds} model rounds without a valid structured output"
                    ),
                );
            }
            if !self.wait_unpaused().await {
                return Outcome::Interrupted;
            }
            if let Some(message) = self.over_budget(&tools) {
                return Outcome::BudgetLimited(message);
            }
            if let Err(outcome) = self.compact_if_needed(client.as_ref(), &tools).await {
                return outcome;
            }
            let tool_calls = match self
                .ask_model(client.as_ref(), Some(instructions.clone()), &tools)
                .await
            {
                Ok(calls) => calls,
                Err(outcome) => return outcome,
            };
            let mut accepted = false;
            if tool_calls.is_empty() {
                // A text answer is an attempt too: the JSON itself is accepted.
                match self.judge_text(spec, invalid < spec.retries).await {
                    Ok(()) => accepted = true,
                    Err(problem) => {
                        invalid += 1;
                        last_problem = problem;
                    }
                }
            } else {
                let mut results = Vec::with_capacity(tool_calls.len());
                for call in &tool_calls {
                    let output = if accepted {
                        self.reject(
                            call,
                            Value::String(call.arguments.clone()),
                            "ignored: an earlier submission in this answer was accepted",
                        )
                        .await
                    } else {
                        match spec.check(call) {
                            Ok((_, payload)) => {
                                accepted = true;
                                self.accept(spec, call, payload).await
                            }
                            Err((args, problem)) => {
                                invalid += 1;
                                let output = self.reject(call, args, &problem).await;
                                last_problem = problem;
                                output
                            }
                        }
                    };
                    results.push(Message::ToolResult {
                        call_id: call.id.clone(),
                        output,
                    });
                }
                self.messages.extend(results);
            }
            if accepted {
                return Outcome::Completed;
            }
            if invalid > spec.retries {
                return Outcome::Failed(
                    TurnFailure::Other,
                    format!(
                        "no valid structured output: {invalid} submissions were rejected (retry limit {}); the last problem: {last_problem}",
                        spec.retries
                    ),
                );
            }
            if self.cancel.is_cancelled() {
                return Outcome::Interrupted;
            }
            self.take_steers(steer).await;
        }
    }

    /// Records an accepted submission as a `structured_output` item: the
    /// one its JSON streamed into, else a new one with the payload sent as
    /// one delta. Returns what the model is told.
    async fn accept(&mut self, spec: &StructuredSpec, call: &ToolCall, payload: Value) -> String {
        let output = "accepted".to_owned();
        let mut item = match self.streamed_calls.remove(&call.id) {
            Some(item) => item,
            None => {
                let item = self.em.new_item(
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
                item
            }
        };
        item.tool_call = Some(origin(call, &output));
        item.kind = ItemKind::StructuredOutput {
            schema_name: spec.name.clone(),
            payload,
        };
        self.em.complete_item(item, ItemStatus::Completed).await;
        output
    }

    /// Records a rejected submission: the `structured_output` item its JSON
    /// streamed into fails (so a streaming client drops the partial text),
    /// else a failed tool call item is recorded. Returns what the model is told.
    async fn reject(&mut self, call: &ToolCall, arguments: Value, problem: &str) -> String {
        let output = format!("error: {problem}");
        let mut item = match self.streamed_calls.remove(&call.id) {
            Some(mut item) => {
                if let ItemKind::StructuredOutput { payload, .. } = &mut item.kind {
                    *payload = arguments;
                }
                item
            }
            None => {
                let item = self.em.new_item(
                    self.rounds,
                    ItemKind::ToolCall {
                        name: call.name.clone(),
                        arguments,
                        result: None,
                        error: Some(problem.to_owned()),
                    },
                );
                self.em.announce(&item).await;
                item
            }
        };
        item.tool_call = Some(origin(call, &output));
        self.em.complete_item(item, ItemStatus::Failed).await;
        output
    }
}

fn origin(call: &ToolCall, output: &str) -> ToolCallOrigin {
    ToolCallOrigin {
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        output: Some(output.to_owned()),
        refused: None,
        internal: true,
    }
}

//! The engine API for structured output, plans and goals: generate JSON
//! valid against a schema (whole or streamed), create and read plans and
//! move their steps, extract and check goals, and set, read and clear the
//! thread goal with its token budget.
//!
//! Every generation is a turn of the thread (mode `structured`), so it sees
//! the thread's history, counts toward its usage and goal budget, and shows
//! in its log like any other turn.

use std::sync::Arc;

use gantry_types::{
    AgentGoal, DeltaKind, EventPayload, ExecutionPlan, GoalCheck, ItemKind, ItemStatus,
    PlanStepStatus, ThreadGoal, ThreadGoalStatus, ThreadId, TurnId, TurnStatus, Usage, new_id,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ThreadFeed;
use crate::actor::{Command, StructuredCommand};
use crate::bus::Notification;
use crate::turn::StructuredSpec;
use crate::{Engine, EngineError, plans};

/// Invalid submissions answered with their errors before a structured turn
/// fails, unless the request says otherwise.
pub const DEFAULT_STRUCTURED_RETRIES: u32 = 3;

/// A request for output valid against a JSON Schema.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredRequest {
    /// What the model is asked (the turn's user message).
    pub prompt: String,
    /// The JSON Schema the output must satisfy.
    pub schema: Value,
    /// A name for the schema, carried to the `structured_output` item.
    pub schema_name: Option<String>,
    /// Instructions for this output, added to the thread's.
    pub instructions: Option<String>,
    /// Invalid submissions answered with their errors before the turn fails.
    pub retries: u32,
    /// The W3C `traceparent` the request came with, recorded with the turn
    /// as a message's is ([`crate::UserInput::trace_parent`]).
    pub trace_parent: Option<String>,
}

impl StructuredRequest {
    /// Asks `prompt`, answered as JSON valid against `schema`.
    pub fn new(prompt: impl Into<String>, schema: Value) -> Self {
        Self {
            prompt: prompt.into(),
            schema,
            schema_name: None,
            instructions: None,
            retries: DEFAULT_STRUCTURED_RETRIES,
            trace_parent: None,
        }
    }
}

/// Output the model submitted and the schema accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredOutput {
    /// The turn that produced it.
    pub turn_id: TurnId,
    /// The accepted payload.
    pub payload: Value,
    /// Tokens the turn used.
    pub usage: Usage,
}

/// What a structured stream yields.
#[derive(Debug)]
pub enum StructuredChunk {
    /// More of the output's JSON text, as the model writes it.
    Partial(String),
    /// The submission streamed so far was rejected (it does not match the
    /// schema); drop its partial text, the model tries again.
    Rejected {
        /// What was wrong with it, as the model is told.
        problem: String,
    },
    /// The turn ended: the accepted output, or why there is none. Last.
    Done(Result<StructuredOutput, EngineError>),
}

/// A structured-output turn's output as it streams.
pub struct StructuredStream {
    engine: Engine,
    thread: ThreadId,
    turn: TurnId,
    feed: ThreadFeed,
    done: bool,
}

impl StructuredStream {
    /// The turn producing the output.
    pub fn turn_id(&self) -> &TurnId {
        &self.turn
    }

    /// The next chunk; `None` after [`StructuredChunk::Done`].
    pub async fn next(&mut self) -> Option<StructuredChunk> {
        if self.done {
            return None;
        }
        loop {
            let n = match self.feed.next().await {
                Ok(Some(n)) => n,
                Ok(None) => {
                    self.done = true;
                    return Some(StructuredChunk::Done(Err(EngineError::ShuttingDown)));
                }
                Err(e) => {
                    self.done = true;
                    return Some(StructuredChunk::Done(Err(e)));
                }
            };
            match n {
                Notification::Delta(d) if d.turn_id == self.turn => {
                    if let DeltaKind::StructuredOutput(text) = &d.kind {
                        return Some(StructuredChunk::Partial(text.clone()));
                    }
                }
                Notification::Event(e) => {
                    if let Some(problem) = rejected(&e.payload, &self.turn) {
                        return Some(StructuredChunk::Rejected { problem });
                    }
                    if !ends(&e.payload, &self.turn) {
                        continue;
                    }
                    self.done = true;
                    let result = self
                        .engine
                        .structured()
                        .result(&self.thread, &self.turn)
                        .await;
                    return Some(StructuredChunk::Done(result));
                }
                _ => {}
            }
        }
    }
}

/// What the model was told about a streamed submission that failed.
fn rejected(payload: &EventPayload, turn: &TurnId) -> Option<String> {
    match payload {
        EventPayload::ItemCompleted { item }
            if &item.turn_id == turn
                && item.status == ItemStatus::Failed
                && matches!(item.kind, ItemKind::StructuredOutput { .. }) =>
        {
            let told = item.tool_call.as_ref().and_then(|o| o.output.clone());
            Some(told.unwrap_or_else(|| "the submission was not completed".to_owned()))
        }
        _ => None,
    }
}

fn ends(payload: &EventPayload, turn: &TurnId) -> bool {
    matches!(payload, EventPayload::TurnCompleted { turn_id, .. } if turn_id == turn)
}

/// Structured output: turns whose answer follows a JSON schema.
/// Get one from [`Engine::structured`].
#[derive(Clone, Copy)]
pub struct Structured<'e> {
    pub(crate) engine: &'e Engine,
}

impl Structured<'_> {
    /// Starts a structured-output turn and returns its id at once; its
    /// `structured_output` item (or error item) tells how it went. Refused
    /// while a turn runs, and for a schema that does not compile.
    pub async fn start(
        &self,
        thread: &ThreadId,
        request: StructuredRequest,
    ) -> Result<TurnId, EngineError> {
        if request.prompt.trim().is_empty() {
            return Err(EngineError::InvalidInput("the prompt is empty".to_owned()));
        }
        let spec = StructuredSpec::new(
            &request.schema,
            request.schema_name,
            request.instructions,
            request.retries,
        )
        .map_err(EngineError::InvalidInput)?;
        let (text, trace_parent) = (request.prompt, request.trace_parent);
        let spec = Arc::new(spec);
        self.engine
            .ask(thread, |reply| {
                Command::Structured(StructuredCommand::Start {
                    text,
                    trace_parent,
                    spec,
                    reply,
                })
            })
            .await?
    }

    /// Generates output valid against the request's schema and waits for it
    /// (`GenerateStructured`).
    pub async fn generate(
        &self,
        thread: &ThreadId,
        request: StructuredRequest,
    ) -> Result<StructuredOutput, EngineError> {
        let mut stream = self.engine.structured().stream(thread, request).await?;
        while let Some(chunk) = stream.next().await {
            if let StructuredChunk::Done(result) = chunk {
                return result;
            }
        }
        Err(EngineError::ShuttingDown)
    }

    /// Generates output valid against the request's schema, streaming its
    /// JSON as it arrives (`StreamGenerateStructured`).
    pub async fn stream(
        &self,
        thread: &ThreadId,
        request: StructuredRequest,
    ) -> Result<StructuredStream, EngineError> {
        // Subscribe before starting, so the turn's end cannot be missed.
        let from = self.engine.threads().read(thread).await?.thread.last_seq + 1;
        let feed = self.engine.feeds().follow(thread, from).await?;
        let turn = self.engine.structured().start(thread, request).await?;
        Ok(StructuredStream {
            engine: self.engine.clone(),
            thread: thread.clone(),
            turn,
            feed,
            done: false,
        })
    }

    /// The output of an ended structured-output turn, or why it has none.
    pub async fn result(
        &self,
        thread: &ThreadId,
        turn: &TurnId,
    ) -> Result<StructuredOutput, EngineError> {
        let view = self.engine.threads().read(thread).await?;
        let tv = view
            .turns
            .iter()
            .rev()
            .find(|t| &t.turn.id == turn)
            .ok_or_else(|| EngineError::TurnNotFound {
                thread: thread.clone(),
                turn: turn.clone(),
            })?;
        if tv.turn.status == TurnStatus::Running {
            return Err(EngineError::InvalidInput(format!(
                "turn {turn} is still running"
            )));
        }
        let output = tv.items.iter().rev().find_map(|i| match &i.kind {
            ItemKind::StructuredOutput { payload, .. } if i.status == ItemStatus::Completed => {
                Some(payload.clone())
            }
            _ => None,
        });
        if let Some(payload) = output {
            return Ok(StructuredOutput {
                turn_id: turn.clone(),
                payload,
                usage: tv.turn.usage,
            });
        }
        let last_error = tv.items.iter().rev().find_map(|i| match &i.kind {
            ItemKind::Error { message } => Some(message.clone()),
            _ => None,
        });
        let reason = last_error
            .or_else(|| tv.turn.error.clone())
            .unwrap_or_else(|| "the turn ended without structured output".to_owned());
        Err(EngineError::Structured {
            turn: turn.clone(),
            reason,
            failure: tv.turn.failure,
        })
    }
}

/// Plans: a thread's execution plans and their steps.
/// Get one from [`Engine::plans`].
#[derive(Clone, Copy)]
pub struct Plans<'e> {
    pub(crate) engine: &'e Engine,
}

impl Plans<'_> {
    /// Has the model make an execution plan for `prompt`, stores it on the
    /// thread with a new id, and returns it (`CreatePlan`).
    pub async fn create(
        &self,
        thread: &ThreadId,
        prompt: &str,
        context: Option<&str>,
    ) -> Result<ExecutionPlan, EngineError> {
        let mut request =
            StructuredRequest::new(plans::plan_input(prompt, context), plans::plan_schema());
        request.schema_name = Some("execution_plan".to_owned());
        request.instructions = Some(plans::PLAN_INSTRUCTIONS.to_owned());
        let out = self.engine.structured().generate(thread, request).await?;
        let mut plan: ExecutionPlan = decode(&out)?;
        let now = self.engine.shared.clock.now_ms();
        plan.id = new_id();
        plan.created_at = now;
        plan.updated_at = now;
        if plan.estimated_steps == 0 {
            plan.estimated_steps = u32::try_from(plan.steps.len()).unwrap_or(u32::MAX);
        }
        let stored = plan.clone();
        self.engine
            .ask(thread, |reply| {
                Command::Structured(StructuredCommand::StorePlan {
                    plan: stored,
                    reply,
                })
            })
            .await??;
        Ok(plan)
    }

    /// A plan stored on the thread (`GetPlan`).
    pub async fn get(
        &self,
        thread: &ThreadId,
        plan_id: &str,
    ) -> Result<ExecutionPlan, EngineError> {
        self.engine
            .threads()
            .read(thread)
            .await?
            .plans
            .iter()
            .find(|p| p.id == plan_id)
            .cloned()
            .ok_or_else(|| EngineError::NotFound {
                what: "plan",
                name: plan_id.to_owned(),
            })
    }

    /// Moves a plan step to `status` as work proceeds; returns the plan.
    pub async fn update_step(
        &self,
        thread: &ThreadId,
        plan_id: &str,
        step_id: &str,
        status: PlanStepStatus,
    ) -> Result<ExecutionPlan, EngineError> {
        let (plan_id, step_id) = (plan_id.to_owned(), step_id.to_owned());
        self.engine
            .ask(thread, |reply| {
                Command::Structured(StructuredCommand::UpdatePlanStep {
                    plan_id,
                    step_id,
                    status,
                    reply,
                })
            })
            .await?
    }
}

/// Goals: a thread's objective, its status and whether it is met.
/// Get one from [`Engine::goals`].
#[derive(Clone, Copy)]
pub struct Goals<'e> {
    pub(crate) engine: &'e Engine,
}

impl Goals<'_> {
    /// Has the model extract the goal of `prompt`, with success criteria
    /// (`ExtractGoal`).
    pub async fn extract(&self, thread: &ThreadId, prompt: &str) -> Result<AgentGoal, EngineError> {
        let mut request = StructuredRequest::new(prompt, plans::goal_schema());
        request.schema_name = Some("goal".to_owned());
        request.instructions = Some(plans::EXTRACT_GOAL_INSTRUCTIONS.to_owned());
        let out = self.engine.structured().generate(thread, request).await?;
        let mut goal: AgentGoal = decode(&out)?;
        goal.created_at = self.engine.shared.clock.now_ms();
        goal.progress = 0.0;
        goal.achieved = false;
        goal.achieved_at = None;
        Ok(goal)
    }

    /// Has the model judge how far `goal` is achieved in `current_state`
    /// (`CheckGoalAchievement`).
    pub async fn check_achievement(
        &self,
        thread: &ThreadId,
        goal: &AgentGoal,
        current_state: &str,
    ) -> Result<GoalCheck, EngineError> {
        let mut request = StructuredRequest::new(
            plans::check_input(goal, current_state),
            plans::goal_check_schema(),
        );
        request.schema_name = Some("goal_check".to_owned());
        request.instructions = Some(plans::CHECK_GOAL_INSTRUCTIONS.to_owned());
        let out = self.engine.structured().generate(thread, request).await?;
        decode(&out)
    }

    /// Sets the thread goal. The same objective as the current goal keeps
    /// its id and usage, takes the new budget and becomes active again (how
    /// to continue after `budget_limited`); another objective starts afresh.
    pub async fn set(
        &self,
        thread: &ThreadId,
        objective: impl Into<String>,
        token_budget: Option<u64>,
    ) -> Result<ThreadGoal, EngineError> {
        let objective = objective.into();
        if objective.trim().is_empty() {
            return Err(EngineError::InvalidInput(
                "the objective is empty".to_owned(),
            ));
        }
        if token_budget == Some(0) {
            return Err(EngineError::InvalidInput(
                "a token budget must be positive; leave it out for none".to_owned(),
            ));
        }
        self.engine
            .ask(thread, |reply| {
                Command::Structured(StructuredCommand::SetGoal {
                    objective,
                    token_budget,
                    reply,
                })
            })
            .await?
    }

    /// Changes the thread goal's status (pause it, mark it blocked or complete...).
    pub async fn set_status(
        &self,
        thread: &ThreadId,
        status: ThreadGoalStatus,
    ) -> Result<ThreadGoal, EngineError> {
        self.engine
            .ask(thread, |reply| {
                Command::Structured(StructuredCommand::SetGoalStatus { status, reply })
            })
            .await?
    }

    /// The thread goal, if one is set.
    pub async fn get(self, thread: &ThreadId) -> Result<Option<ThreadGoal>, EngineError> {
        Ok(self
            .engine
            .threads()
            .read(thread)
            .await?
            .thread
            .goal
            .clone())
    }

    /// Removes the thread goal; returns it, if there was one.
    pub async fn clear(self, thread: &ThreadId) -> Result<Option<ThreadGoal>, EngineError> {
        self.engine
            .ask(thread, |reply| {
                Command::Structured(StructuredCommand::ClearGoal { reply })
            })
            .await
    }
}

/// The typed value of an accepted payload. The schema was checked, so a
/// failure here means the schema and the type disagree.
fn decode<T: DeserializeOwned>(out: &StructuredOutput) -> Result<T, EngineError> {
    serde_json::from_value(out.payload.clone()).map_err(|e| EngineError::Structured {
        turn: out.turn_id.clone(),
        reason: format!("the accepted output does not fit the expected type: {e}"),
        failure: None,
    })
}

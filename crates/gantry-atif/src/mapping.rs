//! A thread's events as a trajectory: each user input a `user` step, each
//! model round an `agent` step (its text, reasoning, tool calls and their
//! results, the round's usage), each error or compaction a `system` step.

use std::collections::BTreeMap;

use gantry_types::time::iso8601;
use gantry_types::{
    Event, EventPayload, Item, ItemKind, ModelCost, ThreadView, ToolSpec, TurnView, Usage,
};
use serde_json::{Map, Value, json};

use crate::wire::{
    Agent, FinalMetrics, Metrics, Observation, ObservationResult, SCHEMA_VERSION, Source, Step,
    ToolCall, Trajectory,
};

/// Who made the trajectory, and what its model costs.
pub struct AgentInfo<'a> {
    /// The agent system's name (`gantry`).
    pub name: &'a str,
    /// Its version.
    pub version: &'a str,
    /// The tools the agent offers, if the caller knows them.
    pub tools: Option<&'a [ToolSpec]>,
    /// A model's price by model id, for each step's cost (`None`: unknown,
    /// and the step's cost is left out).
    pub price: &'a dyn Fn(&str) -> Option<ModelCost>,
}

/// The thread has nothing to put in a trajectory: no event log, or no
/// turn yet (ATIF wants at least one step).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoSteps;

impl std::fmt::Display for NoSteps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the thread has no turns yet, so no trajectory")
    }
}

impl std::error::Error for NoSteps {}

/// The trajectory of a thread, from its whole event log (oldest first).
pub fn trajectory(events: &[Event], agent: &AgentInfo<'_>) -> Result<Trajectory, NoSteps> {
    let view = ThreadView::from_events(events).ok_or(NoSteps)?;
    let responses = responses_by_round(events);
    let mut steps = Vec::new();
    for tv in &view.turns {
        turn_steps(tv, &view, &responses, agent, &mut steps);
    }
    if steps.is_empty() {
        return Err(NoSteps);
    }
    for (i, step) in steps.iter_mut().enumerate() {
        step.step_id = i as u64 + 1;
    }
    let thread = &view.thread;
    let wall_ms: u64 = view.turns.iter().filter_map(|t| t.turn.duration_ms()).sum();
    let priced = (agent.price)(&thread.model).is_some() || thread.cost_usd > 0.0;
    let final_metrics = FinalMetrics {
        total_prompt_tokens: Some(thread.usage.input_tokens),
        total_completion_tokens: Some(thread.usage.output_tokens),
        total_cached_tokens: Some(thread.usage.cached_input_tokens),
        total_cost_usd: priced.then_some(thread.cost_usd),
        total_steps: Some(steps.len() as u64),
        extra: Some(object(json!({
            "reasoning_tokens": thread.usage.reasoning_tokens,
            "cache_write_tokens": thread.usage.cache_write_tokens,
            "turns": view.turns.len(),
            "wall_time_ms": wall_ms,
        }))),
    };
    let turns: Vec<Value> = view
        .turns
        .iter()
        .map(|t| {
            json!({
                "turn_id": t.turn.id.as_str(),
                "status": t.turn.status,
                "rounds": t.turn.rounds,
                "duration_ms": t.turn.duration_ms(),
                "error": t.turn.error,
                "failure": t.turn.failure,
            })
        })
        .collect();
    Ok(Trajectory {
        schema_version: SCHEMA_VERSION.to_owned(),
        session_id: Some(thread.id.as_str().to_owned()),
        agent: Agent {
            name: agent.name.to_owned(),
            version: agent.version.to_owned(),
            model_name: Some(thread.model.clone()),
            tool_definitions: agent.tools.map(|t| t.iter().map(function_schema).collect()),
        },
        steps,
        notes: Some(
            "Exported by Gantry from the thread's event log: one agent step per model round."
                .to_owned(),
        ),
        final_metrics: Some(final_metrics),
        extra: Some(object(json!({
            "cwd": thread.cwd,
            "thread_status": thread.status,
            "turns": turns,
        }))),
    })
}

/// What each model round of each turn used: (turn id, round) to the
/// responses' usages.
fn responses_by_round(events: &[Event]) -> BTreeMap<(String, u32), Vec<Usage>> {
    let mut by_round: BTreeMap<(String, u32), Vec<Usage>> = BTreeMap::new();
    for event in events {
        if let EventPayload::ModelResponded {
            turn_id,
            round,
            usage,
            ..
        } = &event.payload
        {
            by_round
                .entry((turn_id.as_str().to_owned(), *round))
                .or_default()
                .push(*usage);
        }
    }
    by_round
}

/// The steps of one turn, in the order its items started.
fn turn_steps(
    tv: &TurnView,
    view: &ThreadView,
    responses: &BTreeMap<(String, u32), Vec<Usage>>,
    agent: &AgentInfo<'_>,
    steps: &mut Vec<Step>,
) {
    let turn = &tv.turn;
    let model = turn.model.as_deref().unwrap_or(&view.thread.model);
    let has_user_item = tv
        .items
        .iter()
        .any(|i| matches!(i.kind, ItemKind::UserMessage { .. }));
    if !has_user_item {
        // Logs written before the input was an item of its own.
        steps.push(plain_step(
            Source::User,
            turn.input.clone(),
            turn.started_at,
        ));
    }
    let mut round: Option<RoundStep> = None;
    // A round split by a step of its own (an error between its items)
    // counts its usage once, on its first agent step.
    let mut metered: Vec<u32> = Vec::new();
    for item in &tv.items {
        match &item.kind {
            ItemKind::UserMessage { text, .. } => {
                flush(&mut round, steps);
                steps.push(plain_step(Source::User, text.clone(), item.started_at));
            }
            ItemKind::Error { message } => {
                flush(&mut round, steps);
                steps.push(plain_step(Source::System, message.clone(), item.started_at));
            }
            ItemKind::ContextCompaction {
                summary, trigger, ..
            } => {
                flush(&mut round, steps);
                let text = format!("context compacted ({trigger}): {summary}");
                steps.push(plain_step(Source::System, text, item.started_at));
            }
            _ => {
                if round.as_ref().is_none_or(|r| r.round != item.round) {
                    flush(&mut round, steps);
                    let usages = match metered.contains(&item.round) {
                        true => &[][..],
                        false => responses
                            .get(&(turn.id.as_str().to_owned(), item.round))
                            .map_or(&[][..], Vec::as_slice),
                    };
                    metered.push(item.round);
                    round = Some(RoundStep::new(
                        item,
                        turn.id.as_str(),
                        usages,
                        (agent.price)(model),
                        (model != view.thread.model).then(|| model.to_owned()),
                    ));
                }
                if let Some(r) = round.as_mut() {
                    r.add(item);
                }
            }
        }
    }
    flush(&mut round, steps);
}

/// A step with only a message (user input, an error, a compaction).
fn plain_step(source: Source, message: String, at: i64) -> Step {
    Step {
        step_id: 0,
        timestamp: Some(iso8601(at)),
        source,
        model_name: None,
        message,
        reasoning_content: None,
        tool_calls: None,
        observation: None,
        metrics: None,
        llm_call_count: None,
        extra: None,
    }
}

/// The agent step of one model round, being filled.
struct RoundStep {
    round: u32,
    step: Step,
    text: Vec<String>,
    reasoning: Vec<String>,
    calls: Vec<ToolCall>,
    results: Vec<ObservationResult>,
    started: i64,
    ended: i64,
}

impl RoundStep {
    fn new(
        first: &Item,
        turn_id: &str,
        usages: &[Usage],
        price: Option<ModelCost>,
        model_name: Option<String>,
    ) -> Self {
        let mut usage = Usage::default();
        for u in usages {
            usage.add(u);
        }
        // A round whose provider reported no usage has no metrics: unknown,
        // not zero (and `llm_call_count: 0` would mean "no model call").
        let metrics = (!usages.is_empty()).then(|| Metrics {
            prompt_tokens: Some(usage.input_tokens),
            completion_tokens: Some(usage.output_tokens),
            cached_tokens: Some(usage.cached_input_tokens),
            cost_usd: price.map(|p| p.of(&usage)),
            extra: Some(object(json!({
                "reasoning_tokens": usage.reasoning_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
            }))),
        });
        let mut step = plain_step(Source::Agent, String::new(), first.started_at);
        step.model_name = model_name;
        step.llm_call_count = (!usages.is_empty()).then_some(usages.len() as u64);
        step.metrics = metrics;
        step.extra = Some(object(json!({"turn_id": turn_id, "round": first.round})));
        RoundStep {
            round: first.round,
            step,
            text: Vec::new(),
            reasoning: Vec::new(),
            calls: Vec::new(),
            results: Vec::new(),
            started: first.started_at,
            ended: first.completed_at.unwrap_or(first.started_at),
        }
    }

    fn add(&mut self, item: &Item) {
        self.started = self.started.min(item.started_at);
        self.ended = self.ended.max(item.completed_at.unwrap_or(item.started_at));
        match &item.kind {
            ItemKind::AgentMessage { text } if !text.is_empty() => self.text.push(text.clone()),
            ItemKind::Reasoning { text, .. } if !text.is_empty() => {
                self.reasoning.push(text.clone())
            }
            _ => {}
        }
        if let Some(call) = item.public_tool_call() {
            self.calls.push(ToolCall {
                tool_call_id: call.call_id.clone(),
                function_name: call.name.clone(),
                arguments: arguments(&call.arguments),
            });
            self.results.push(ObservationResult {
                source_call_id: Some(call.call_id.clone()),
                content: call.output.clone().or_else(|| kind_output(&item.kind)),
                extra: Some(result_extra(item)),
            });
        }
    }

    fn finish(mut self) -> Step {
        self.step.message = self.text.join("\n\n");
        self.step.reasoning_content =
            (!self.reasoning.is_empty()).then(|| self.reasoning.join("\n\n"));
        self.step.tool_calls = (!self.calls.is_empty()).then_some(self.calls);
        self.step.observation = (!self.results.is_empty()).then_some(Observation {
            results: self.results,
        });
        if let Some(extra) = self.step.extra.as_mut() {
            let duration = self.ended.saturating_sub(self.started).max(0);
            extra.insert("duration_ms".to_owned(), json!(duration));
        }
        self.step
    }
}

fn flush(round: &mut Option<RoundStep>, steps: &mut Vec<Step>) {
    if let Some(r) = round.take() {
        steps.push(r.finish());
    }
}

/// A call's arguments as an object: ATIF wants one, a model may send
/// anything (kept whole under `raw`).
fn arguments(raw: &str) -> Map<String, Value> {
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => map,
        Ok(Value::Null) if raw.trim().is_empty() => Map::new(),
        _ if raw.trim().is_empty() => Map::new(),
        _ => object(json!({"raw": raw})),
    }
}

/// What an item's tool gave back, for items whose call recorded no output.
fn kind_output(kind: &ItemKind) -> Option<String> {
    match kind {
        ItemKind::CommandExecution { output, .. } => Some(output.clone()),
        ItemKind::FileChange { diff, .. } => Some(diff.clone()),
        ItemKind::ToolCall { result, error, .. } => result.clone().or_else(|| error.clone()),
        ItemKind::ExternalTask { result, error, .. } => result.clone().or_else(|| error.clone()),
        _ => None,
    }
}

/// An observation's details: the item's kind and status, a command's
/// exit code and wall time, why the engine refused the call.
fn result_extra(item: &Item) -> Map<String, Value> {
    let mut extra = object(json!({
        "item_type": item.kind.name(),
        "status": item.status,
    }));
    if let ItemKind::CommandExecution {
        exit_code,
        duration_ms,
        command,
        ..
    } = &item.kind
    {
        extra.insert("command".to_owned(), json!(command));
        extra.insert("exit_code".to_owned(), json!(exit_code));
        extra.insert("duration_ms".to_owned(), json!(duration_ms));
    }
    if let ItemKind::ToolCall {
        error: Some(error), ..
    } = &item.kind
    {
        extra.insert("error".to_owned(), json!(error));
    }
    if let Some(refused) = item.tool_call.as_ref().and_then(|c| c.refused.as_ref()) {
        extra.insert("refused".to_owned(), json!(refused));
    }
    extra
}

/// A tool in OpenAI's function calling shape, as ATIF's
/// `tool_definitions` wants.
fn function_schema(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        }
    })
}

/// A `json!` object literal as a map.
fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests;

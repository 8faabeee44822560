//! Spans from events: a turn's `invoke_agent` span opens at its
//! `turn_started` and ends at its `turn_completed`; its `chat` and
//! `execute_tool` spans (and approval waits) are made whole when the event
//! that ends them arrives, with the start time it carries. Nothing here
//! blocks a turn: spans go to the batch processor's queue.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gantry_core::Engine;
use gantry_types::{
    Event, EventPayload, Item, ItemKind, ItemStatus, ModelCall, ProviderKind, Turn, TurnFailure,
    TurnId, TurnStatus, TurnTrace, Usage,
};
use opentelemetry::trace::{
    SpanBuilder, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId,
    TraceState, Tracer as _,
};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::SdkTracer;

/// The agent name of a thread run under no agent.
const DEFAULT_AGENT: &str = "gantry";

/// The spans of the turns running now.
pub(crate) struct Spans {
    tracer: SdkTracer,
    capture_content: bool,
    turns: HashMap<TurnId, OpenTurn>,
}

/// A turn's open `invoke_agent` span and what its children repeat.
struct OpenTurn {
    cx: Context,
    model: String,
    provider: &'static str,
    /// The last answer the agent wrote (for content capture).
    answer: Option<String>,
    /// The ids the engine gave the turn and its model requests.
    trace: Option<TurnTrace>,
    /// Rounds whose `chat` span has its derived id: a compaction's
    /// response shares its round's number, and takes a random one.
    named_rounds: std::collections::HashSet<u32>,
}

impl Spans {
    pub(crate) fn new(tracer: SdkTracer, capture_content: bool) -> Self {
        Spans {
            tracer,
            capture_content,
            turns: HashMap::new(),
        }
    }

    /// Takes one event into the spans.
    pub(crate) async fn observe(&mut self, engine: &Engine, event: &Event) {
        match &event.payload {
            EventPayload::TurnStarted { turn } => self.turn_started(engine, turn).await,
            EventPayload::TurnCompleted {
                turn_id,
                status,
                usage,
                failure,
                ..
            } => self.turn_completed(turn_id, *status, usage, *failure, event.ts),
            EventPayload::ModelResponded {
                turn_id,
                round,
                usage,
                call: Some(call),
                ..
            } => self.chat(turn_id, *round, usage, call, event.ts),
            EventPayload::ItemCompleted { item } => self.item_completed(item),
            _ => {}
        }
    }

    async fn turn_started(&mut self, engine: &Engine, turn: &Turn) {
        let view = engine.clone().threads().read(&turn.thread_id).await.ok();
        let thread = view.as_ref().map(|v| &v.thread);
        let model = turn
            .model
            .clone()
            .or_else(|| thread.map(|t| t.model.clone()))
            .unwrap_or_default();
        let kind = thread
            .and_then(|t| t.endpoint.as_ref().map(|e| e.kind))
            .or_else(|| engine.providers().route_of(&model).map(|(p, _)| p.kind));
        let provider = provider_name(kind);
        let agent_id = thread.and_then(|t| t.agent_id.clone());
        let agent_name = match &agent_id {
            Some(id) => engine
                .agents()
                .get(id)
                .await
                .map(|a| a.name)
                .unwrap_or_else(|_| id.0.clone()),
            None => DEFAULT_AGENT.to_owned(),
        };
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.provider.name", provider),
            KeyValue::new("gen_ai.agent.name", agent_name.clone()),
            KeyValue::new("gen_ai.conversation.id", turn.thread_id.0.clone()),
            KeyValue::new("gen_ai.request.model", model.clone()),
            KeyValue::new("gantry.turn.id", turn.id.0.clone()),
        ];
        if let Some(id) = agent_id {
            attributes.push(KeyValue::new("gen_ai.agent.id", id.0));
        }
        if self.capture_content {
            attributes.push(KeyValue::new(
                "gen_ai.input.messages",
                messages("user", &turn.input, None),
            ));
        }
        let builder = SpanBuilder::from_name(format!("invoke_agent {agent_name}"))
            .with_kind(SpanKind::Internal)
            .with_start_time(at(turn.started_at))
            .with_attributes(attributes);
        let parent = parent_of(turn.trace_parent.as_deref());
        // The ids the engine's log lines of the turn carry.
        let trace = turn.trace();
        let span = crate::ids::with_turn_ids(
            trace
                .as_ref()
                .and_then(|t| TraceId::from_hex(&t.trace_id).ok()),
            trace
                .as_ref()
                .and_then(|t| SpanId::from_hex(&t.span_id).ok()),
            || self.tracer.build_with_context(builder, &parent),
        );
        self.turns.insert(
            turn.id.clone(),
            OpenTurn {
                cx: parent.with_span(span),
                model,
                provider,
                answer: None,
                trace,
                named_rounds: std::collections::HashSet::new(),
            },
        );
    }

    fn turn_completed(
        &mut self,
        turn_id: &TurnId,
        status: TurnStatus,
        usage: &Usage,
        failure: Option<TurnFailure>,
        ts: i64,
    ) {
        let Some(open) = self.turns.remove(turn_id) else {
            return;
        };
        let span = open.cx.span();
        for kv in usage_attributes(usage) {
            span.set_attribute(kv);
        }
        if self.capture_content
            && let Some(answer) = &open.answer
        {
            span.set_attribute(KeyValue::new(
                "gen_ai.output.messages",
                messages("assistant", answer, Some("stop")),
            ));
        }
        let error = match status {
            TurnStatus::Failed => Some(failure.map_or("other".to_owned(), failure_name)),
            TurnStatus::Interrupted => Some("interrupted".to_owned()),
            TurnStatus::Completed | TurnStatus::Running => None,
        };
        if let Some(error) = error {
            span.set_attribute(KeyValue::new("error.type", error.clone()));
            span.set_status(Status::error(error));
        }
        span.end_with_timestamp(at(ts));
    }

    fn chat(&mut self, turn_id: &TurnId, round: u32, usage: &Usage, call: &ModelCall, ts: i64) {
        let Some(open) = self.turns.get_mut(turn_id) else {
            return;
        };
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", open.provider),
            KeyValue::new("gen_ai.request.model", open.model.clone()),
        ];
        attributes.extend(usage_attributes(usage));
        if let Some(id) = &call.response_id {
            attributes.push(KeyValue::new("gen_ai.response.id", id.clone()));
        }
        if let Some(model) = &call.response_model {
            attributes.push(KeyValue::new("gen_ai.response.model", model.clone()));
        }
        if let Some(reason) = &call.finish_reason {
            attributes.push(KeyValue::new(
                "gen_ai.response.finish_reasons",
                Value::Array(Array::String(vec![StringValue::from(reason.clone())])),
            ));
        }
        if let Some(first) = call.first_token_at {
            let seconds = (first - call.started_at).max(0) as f64 / 1000.0;
            attributes.push(KeyValue::new(
                "gen_ai.response.time_to_first_chunk",
                seconds,
            ));
        }
        let builder = SpanBuilder::from_name(format!("chat {}", open.model))
            .with_kind(SpanKind::Client)
            .with_start_time(at(call.started_at))
            .with_attributes(attributes);
        // The span id the request's `traceparent` named to the provider.
        let span_id = open
            .trace
            .as_ref()
            .filter(|_| open.named_rounds.insert(round))
            .and_then(|t| SpanId::from_hex(&t.model_call_span_id(round)).ok());
        let mut span = crate::ids::with_turn_ids(None, span_id, || {
            self.tracer.build_with_context(builder, &open.cx)
        });
        use opentelemetry::trace::Span as _;
        // The stream's end; the event's time (later: its items were
        // recorded first) for a log that did not record it.
        span.end_with_timestamp(at(call.ended_at.unwrap_or(ts)));
    }

    fn item_completed(&mut self, item: &Item) {
        let capture = self.capture_content;
        let Some(open) = self.turns.get_mut(&item.turn_id) else {
            return;
        };
        if let ItemKind::AgentMessage { text } = &item.kind {
            open.answer = Some(text.clone());
            return;
        }
        let end = at(item.completed_at.unwrap_or(item.started_at));
        let (name, mut attributes, error) = if let Some(call) = item.public_tool_call() {
            let mut attributes = vec![
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("gen_ai.tool.name", call.name.clone()),
                KeyValue::new("gen_ai.tool.call.id", call.call_id.clone()),
                KeyValue::new("gen_ai.tool.type", tool_type(&call.name)),
            ];
            if capture {
                attributes.push(KeyValue::new(
                    "gen_ai.tool.call.arguments",
                    call.arguments.clone(),
                ));
                if let Some(output) = &call.output {
                    attributes.push(KeyValue::new("gen_ai.tool.call.result", output.clone()));
                }
            }
            let error = match item.status {
                _ if call.refused.is_some() => Some("refused"),
                ItemStatus::Failed => Some("tool_error"),
                ItemStatus::Interrupted => Some("interrupted"),
                ItemStatus::Completed | ItemStatus::InProgress => None,
            };
            (format!("execute_tool {}", call.name), attributes, error)
        } else if let ItemKind::Approval {
            request, decision, ..
        } = &item.kind
        {
            // Not a GenAI operation: the wait for a human, so the time a
            // turn spent on it shows apart from the tool's own.
            let mut attributes = vec![
                KeyValue::new("gen_ai.tool.name", request.tool.clone()),
                KeyValue::new("gen_ai.tool.call.id", request.call_id.clone()),
            ];
            let decided = decision
                .as_ref()
                .and_then(|d| serde_json::to_value(d).ok())
                .and_then(|v| match v {
                    serde_json::Value::String(s) => Some(s),
                    serde_json::Value::Object(o) => o.keys().next().cloned(),
                    _ => None,
                });
            if let Some(decided) = decided {
                attributes.push(KeyValue::new("gantry.approval.decision", decided));
            }
            (format!("approval {}", request.tool), attributes, None)
        } else {
            return;
        };
        if let Some(error) = error {
            attributes.push(KeyValue::new("error.type", error));
        }
        let builder = SpanBuilder::from_name(name)
            .with_kind(SpanKind::Internal)
            .with_start_time(at(item.started_at))
            .with_attributes(attributes);
        let mut span = self.tracer.build_with_context(builder, &open.cx);
        use opentelemetry::trace::Span as _;
        if let Some(error) = error {
            span.set_status(Status::error(error));
        }
        span.end_with_timestamp(end);
    }
}

/// The caller's span, from a W3C `traceparent`, as a remote parent; an
/// empty context (a new trace) without one.
fn parent_of(traceparent: Option<&str>) -> Context {
    let Some(parts) = traceparent.map(|t| t.split('-').collect::<Vec<_>>()) else {
        return Context::new();
    };
    let [_, trace, span, flags] = parts[..] else {
        return Context::new();
    };
    let (Ok(trace), Ok(span), Ok(flags)) = (
        TraceId::from_hex(trace),
        SpanId::from_hex(span),
        u8::from_str_radix(flags, 16),
    ) else {
        return Context::new();
    };
    let parent = SpanContext::new(
        trace,
        span,
        TraceFlags::new(flags),
        true,
        TraceState::default(),
    );
    if !parent.is_valid() {
        return Context::new();
    }
    Context::new().with_remote_span_context(parent)
}

/// The conventions' `gen_ai.provider.name` of the API a model is reached by.
fn provider_name(kind: Option<ProviderKind>) -> &'static str {
    match kind {
        Some(ProviderKind::OpenaiChat | ProviderKind::OpenaiResponses) => "openai",
        Some(ProviderKind::Anthropic) => "anthropic",
        None => "gantry",
    }
}

/// `function` for Gantry's own tools, `extension` for an MCP server's.
fn tool_type(name: &str) -> &'static str {
    if name.starts_with("mcp__") {
        "extension"
    } else {
        "function"
    }
}

/// A failure's wire name (`model_unreachable`, ...), as `error.type`.
fn failure_name(failure: TurnFailure) -> String {
    serde_json::to_value(failure)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "other".to_owned())
}

fn usage_attributes(usage: &Usage) -> Vec<KeyValue> {
    let mut out = vec![
        KeyValue::new("gen_ai.usage.input_tokens", usage.input_tokens as i64),
        KeyValue::new("gen_ai.usage.output_tokens", usage.output_tokens as i64),
    ];
    if usage.cached_input_tokens > 0 {
        out.push(KeyValue::new(
            "gen_ai.usage.cache_read.input_tokens",
            usage.cached_input_tokens as i64,
        ));
    }
    if usage.cache_write_tokens > 0 {
        out.push(KeyValue::new(
            "gen_ai.usage.cache_creation.input_tokens",
            usage.cache_write_tokens as i64,
        ));
    }
    out
}

/// One message in the conventions' JSON shape of `gen_ai.*.messages`.
fn messages(role: &str, text: &str, finish_reason: Option<&str>) -> String {
    let mut message = serde_json::json!({
        "role": role,
        "parts": [{"type": "text", "content": text}],
    });
    if let Some(reason) = finish_reason {
        message["finish_reason"] = reason.into();
    }
    serde_json::Value::Array(vec![message]).to_string()
}

/// Unix milliseconds as a time.
fn at(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

//! What the engine did since the server started, counted from its typed
//! events (the all-threads feed), for `GET /metrics`. Nothing here names a
//! thread, a key or a message: labels are statuses, tools and models.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use gantry_core::{Engine, Notification};
use gantry_types::{Event, EventPayload, ItemKind, ItemStatus, ThreadId, TurnStatus};
use gantry_web::prometheus::{Exposition, Histogram};
use tokio_util::sync::CancellationToken;

/// Upper bounds of the tool-call duration buckets, in seconds.
const TOOL_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0, 300.0,
];

/// Upper bounds of the model request buckets (whole request and time to
/// first token), in seconds: local models answer in milliseconds, long
/// reasoning in minutes.
const MODEL_BUCKETS: [f64; 12] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The counts, shared by the collector and the route.
#[derive(Default)]
pub(crate) struct Metrics {
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    turns_started: u64,
    /// By status and failure reason (empty unless failed).
    turns_ended: BTreeMap<(&'static str, String), u64>,
    /// By tool name and outcome.
    tool_calls: BTreeMap<(String, &'static str), u64>,
    tool_seconds: Option<Histogram>,
    /// By model and direction.
    tokens: BTreeMap<(String, &'static str), u64>,
    model_responses: u64,
    /// From a model request's sending to its stream's end.
    model_seconds: Option<Histogram>,
    /// From a model request's sending to its first token.
    first_token_seconds: Option<Histogram>,
    cost_usd: f64,
    approvals_waiting: i64,
    /// Each thread's model, as its events say (the labels of its tokens).
    models: HashMap<ThreadId, String>,
}

impl Metrics {
    /// Starts counting `engine`'s events from now until `stop`.
    pub(crate) fn collect(engine: Engine, stop: CancellationToken) -> Arc<Self> {
        let metrics = Arc::new(Self::default());
        let counting = metrics.clone();
        tokio::spawn(async move {
            let mut sub = engine.clone().feeds().subscribe_all_now();
            loop {
                let next = tokio::select! {
                    () = stop.cancelled() => return,
                    next = sub.next() => next,
                };
                match next {
                    Some(Notification::Event(event)) => counting.observe(&engine, &event).await,
                    Some(Notification::Delta(_)) => {}
                    // Fell behind: the missed events come from the store.
                    Some(Notification::Lagged { resume_from }) => {
                        match engine.clone().feeds().subscribe_all(resume_from).await {
                            Ok(again) => sub = again,
                            Err(e) => {
                                tracing::warn!(error = %e, "metrics stopped counting");
                                return;
                            }
                        }
                    }
                    None => return,
                }
            }
        });
        metrics
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts one event.
    async fn observe(&self, engine: &Engine, event: &Event) {
        // A thread made before the server started: its model is asked once.
        let model = match &event.payload {
            EventPayload::ModelResponded { .. } => {
                let known = self.counts().models.get(&event.thread_id).cloned();
                match known {
                    Some(model) => Some(model),
                    None => {
                        let read = engine.clone().threads().read(&event.thread_id).await;
                        let model = read.ok().map(|view| view.thread.model.clone());
                        // Asked once: kept like a model its events named.
                        if let Some(model) = &model {
                            self.counts()
                                .models
                                .insert(event.thread_id.clone(), model.clone());
                        }
                        model
                    }
                }
            }
            _ => None,
        };
        let mut c = self.counts();
        match &event.payload {
            EventPayload::ThreadCreated { thread } => {
                c.models
                    .insert(event.thread_id.clone(), thread.model.clone());
            }
            EventPayload::ThreadConfigured { settings } => {
                c.models
                    .insert(event.thread_id.clone(), settings.model.clone());
            }
            EventPayload::ThreadArchived => {
                c.models.remove(&event.thread_id);
            }
            EventPayload::TurnStarted { .. } => c.turns_started += 1,
            EventPayload::TurnCompleted {
                status,
                cost_usd,
                failure,
                ..
            } => {
                // Its wire name (`model_unreachable`, ...).
                let reason = failure
                    .and_then(|f| serde_json::to_value(f).ok())
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                *c.turns_ended
                    .entry((status_name(*status), reason))
                    .or_default() += 1;
                c.cost_usd += cost_usd;
            }
            EventPayload::ModelResponded { usage, call, .. } => {
                c.model_responses += 1;
                if let Some(call) = call {
                    let since = |at: i64| (at - call.started_at).max(0) as f64 / 1000.0;
                    if let Some(end) = call.ended_at {
                        c.model_seconds
                            .get_or_insert_with(|| Histogram::new(&MODEL_BUCKETS))
                            .observe(since(end));
                    }
                    if let Some(first) = call.first_token_at {
                        c.first_token_seconds
                            .get_or_insert_with(|| Histogram::new(&MODEL_BUCKETS))
                            .observe(since(first));
                    }
                }
                let model = model.unwrap_or_default();
                for (direction, n) in [
                    ("input", usage.input_tokens),
                    ("output", usage.output_tokens),
                    ("cached_input", usage.cached_input_tokens),
                    ("reasoning", usage.reasoning_tokens),
                ] {
                    *c.tokens.entry((model.clone(), direction)).or_default() += n;
                }
            }
            EventPayload::ItemStarted { item }
                if matches!(item.kind, ItemKind::Approval { .. }) =>
            {
                c.approvals_waiting += 1;
            }
            EventPayload::ItemCompleted { item } => {
                if matches!(item.kind, ItemKind::Approval { .. }) {
                    c.approvals_waiting -= 1;
                }
                // Internal tools (a structured answer's submission) are
                // the engine's, not the agent's.
                if let Some(call) = item.public_tool_call() {
                    let outcome = match item.status {
                        ItemStatus::Completed => "completed",
                        ItemStatus::Failed => "failed",
                        ItemStatus::Interrupted => "interrupted",
                        ItemStatus::InProgress => "in_progress",
                    };
                    *c.tool_calls
                        .entry((call.name.clone(), outcome))
                        .or_default() += 1;
                    if let Some(end) = item.completed_at {
                        let seconds = (end - item.started_at).max(0) as f64 / 1000.0;
                        c.tool_seconds
                            .get_or_insert_with(|| Histogram::new(&TOOL_BUCKETS))
                            .observe(seconds);
                    }
                }
            }
            _ => {}
        }
    }

    /// The Prometheus text exposition of every series; `loaded`: the
    /// threads the engine holds in memory now.
    pub(crate) fn render(&self, loaded: usize) -> String {
        let c = self.counts();
        let mut out = Exposition::default();
        out.counter(
            "gantry_turns_started_total",
            "Turns started since the server started.",
            [(vec![], c.turns_started as f64)],
        );
        out.counter(
            "gantry_turns_completed_total",
            "Turns ended, by status (completed, failed, interrupted, ...) and, for a failed one, its reason.",
            c.turns_ended.iter().map(|((status, reason), n)| {
                (vec![("status", (*status).to_owned()), ("reason", reason.clone())], *n as f64)
            }),
        );
        let ended: u64 = c.turns_ended.values().sum();
        out.gauge(
            "gantry_turns_running",
            "Turns started since the server started and not yet ended.",
            [(vec![], c.turns_started.saturating_sub(ended) as f64)],
        );
        out.counter(
            "gantry_tool_calls_total",
            "Tool calls the agent made, by tool and outcome.",
            c.tool_calls.iter().map(|((tool, outcome), n)| {
                (
                    vec![("tool", tool.clone()), ("outcome", (*outcome).to_owned())],
                    *n as f64,
                )
            }),
        );
        if let Some(h) = &c.tool_seconds {
            out.histogram(
                "gantry_tool_call_duration_seconds",
                "How long each tool call took, from its start to its result.",
                h,
            );
        }
        out.counter(
            "gantry_model_responses_total",
            "Model responses that reported their usage.",
            [(vec![], c.model_responses as f64)],
        );
        if let Some(h) = &c.model_seconds {
            out.histogram(
                "gantry_model_request_duration_seconds",
                "How long each model request took, from its sending to its stream's end.",
                h,
            );
        }
        if let Some(h) = &c.first_token_seconds {
            out.histogram(
                "gantry_model_time_to_first_token_seconds",
                "How long each model request waited for its first token (text, reasoning or a tool call).",
                h,
            );
        }
        out.counter(
            "gantry_tokens_total",
            "Tokens the models reported, by model and direction (input, output, cached_input, reasoning).",
            c.tokens.iter().map(|((model, direction), n)| {
                (vec![("model", model.clone()), ("direction", (*direction).to_owned())], *n as f64)
            }),
        );
        out.counter(
            "gantry_cost_usd_total",
            "What the turns cost in USD, where the model's price is known.",
            [(vec![], c.cost_usd)],
        );
        out.gauge(
            "gantry_threads_loaded",
            "Threads loaded in memory now (idle ones are evicted after a while).",
            [(vec![], loaded as f64)],
        );
        out.gauge(
            "gantry_approvals_waiting",
            "Approvals asked since the server started and not yet answered.",
            [(vec![], c.approvals_waiting.max(0) as f64)],
        );
        out.into_text()
    }
}

fn status_name(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Running => "running",
        TurnStatus::Completed => "completed",
        TurnStatus::Failed => "failed",
        TurnStatus::Interrupted => "interrupted",
    }
}

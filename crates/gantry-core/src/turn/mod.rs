//! The agent loop of one turn, run as its own task: build the request from
//! the history, stream the model's answer, run the tools it asks for, feed the
//! results back, repeat until a final answer, the round limit, or an interrupt.
//!
//! The task owns no thread state: it reports every change to the thread's
//! actor as a [`TurnMsg`], which assigns seqs and persists.

mod ask_user;
mod budget;
mod checkpoint;
mod compaction;
mod emitter;
mod gate;
mod history;
mod model_round;
use model_round::StreamedTool;
mod registry;
mod structured;
mod tool_calls;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use gantry_llm::{History, Message, ModelRequest, Tools};
use gantry_types::{DeltaKind, EventPayload, Item, ItemId, TurnFailure, TurnId, TurnStatus, Usage};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

pub(crate) use checkpoint::store_dir as checkpoint_store_dir;
pub(crate) use compaction::compacted_history;
pub(crate) use emitter::Emitter;
pub(crate) use history::history;

pub(crate) use structured::StructuredSpec;

use crate::actor::{Resolution, Waiting};
use crate::context::Counter;
use crate::engine::{Input, Shared};
use crate::live::{Grants, LiveRx};
use gantry_tools::ToolRegistry;
use gantry_tools::skills::{SharedSkillSet, SkillSet};

/// What a turn task tells its thread's actor.
// Both variants are frequent; boxing the larger would allocate per event.
#[allow(clippy::large_enum_variant)]
pub(crate) enum TurnMsg {
    /// Append this durable event.
    Emit(EventPayload),
    /// Broadcast this live delta.
    Delta {
        turn_id: TurnId,
        item_id: ItemId,
        kind: DeltaKind,
    },
    /// Hold this request open for clients to answer (approval, external task).
    Await {
        id: String,
        waiting: Waiting,
        reply: oneshot::Sender<Resolution>,
    },
    /// The request's time is up: resolve it by policy unless answered.
    Expire { id: String },
    /// Signal once everything sent before is durably stored (or cannot be).
    Flush(oneshot::Sender<crate::writer::Flushed>),
    /// The turn stopped because the thread goal's token budget is used up
    /// (sent before its `turn_completed`).
    BudgetLimited,
}

/// What a turn needs to know about its thread.
pub(crate) struct TurnSpec {
    pub turn_id: TurnId,
    /// The thread, and the agent it runs under: whose memory the memory
    /// tools use.
    pub thread_id: gantry_types::ThreadId,
    pub agent_id: Option<gantry_types::AgentId>,
    pub model: String,
    pub instructions: Option<String>,
    /// The thread's own model server and sampling settings.
    pub endpoint: Option<gantry_types::ModelEndpoint>,
    pub temperature: Option<f32>,
    pub max_output_tokens: Option<u32>,
    /// The thread's reasoning effort, over the engine's default.
    pub reasoning: Option<String>,
    /// The tools this turn offers, by name (all the thread has: `None`).
    pub allowed_tools: Option<Vec<String>>,
    pub cwd: PathBuf,
    /// The conversation so far, this turn's user message included.
    pub history: Vec<Message>,
    /// What the turn does.
    pub mode: TurnMode,
    /// Nobody can answer questions in this turn (a scheduled job's).
    pub unattended: bool,
    /// The thread's live policy, lanes and pause switch.
    pub live: LiveRx,
    /// The thread's "approve for this session" answers.
    pub grants: Grants,
    /// The thread's skills.
    pub skills: SharedSkillSet,
    /// The trace the turn's model requests name in their `traceparent`;
    /// `None` when they carry none.
    pub trace: Option<gantry_types::TurnTrace>,
}

/// What a turn does.
#[derive(Clone)]
pub(crate) enum TurnMode {
    /// The agent loop on the user's message.
    Chat,
    /// Only compact the context (a manual compaction).
    Compact,
    /// Answer the user's message with output valid against a JSON Schema,
    /// submitted through the only tool offered, `submit_output`.
    Structured(Arc<StructuredSpec>),
}

impl TurnSpec {
    /// The model client of this turn, or why there is none.
    pub(crate) fn client(
        &self,
        shared: &Shared,
    ) -> Result<Arc<dyn gantry_llm::ModelClient>, String> {
        crate::endpoints::client(
            shared,
            &crate::endpoints::ClientSpec {
                model: &self.model,
                endpoint: self.endpoint.as_ref(),
                temperature: self.temperature,
                max_output_tokens: self.max_output_tokens,
            },
        )
    }
}

impl TurnMode {
    /// Whether the turn's input is a user message the model answers.
    pub(crate) fn has_user_message(&self) -> bool {
        !matches!(self, TurnMode::Compact)
    }
}

/// How the loop ended, before the turn is closed.
pub(crate) enum Outcome {
    Completed,
    Interrupted,
    /// Failed: why, for clients, and a one-line message.
    Failed(TurnFailure, String),
    /// Stopped cleanly before a model request that would pass the thread
    /// goal's token budget; says why.
    BudgetLimited(String),
}

struct Loop<'a> {
    shared: &'a Shared,
    spec: &'a TurnSpec,
    cancel: &'a CancellationToken,
    em: &'a Emitter,
    messages: History,
    rounds: u32,
    usage: Usage,
    counter: Counter,
    live: LiveRx,
    grants: Grants,
    /// The built-in tools plus the tools of connected MCP servers, fixed for
    /// the turn so the model's tool list does not change under it.
    tools: ToolRegistry,
    /// The provider's token count of the last request and answer, and the
    /// history length it covered: the base of the next estimate.
    known: Option<(u64, usize)>,
    /// A tool whose arguments stream into an item of their own as they
    /// arrive (structured output's `submit_output`: partial JSON).
    streamed_tool: Option<StreamedTool>,
    /// Open items of the last answer's streamed calls, by call id, for the
    /// loop to complete once it has judged each call.
    streamed_calls: HashMap<String, Item>,
    /// The schema a structured turn's answers must match, sent to
    /// providers with native structured output.
    output_schema: Option<gantry_llm::OutputSchema>,
    /// Set when a tool was refused because the log could not be saved
    /// first: the turn fails after that round.
    store_failure: std::sync::OnceLock<String>,
    /// The last model round failed because the prompt did not fit the
    /// model's context (the provider said so): compaction may recover it.
    overflowed: bool,
    /// The turn's checkpoint store, once its first tool that may write
    /// took one (`None` inside: none could be).
    checkpoint: tokio::sync::OnceCell<Option<Arc<gantry_checkpoint::CheckpointStore>>>,
}

/// Runs a turn to its end and closes it.
pub(crate) async fn run(
    shared: Arc<Shared>,
    spec: TurnSpec,
    cancel: CancellationToken,
    mut steer: mpsc::Receiver<Input>,
    tx: mpsc::Sender<TurnMsg>,
) {
    let em = Emitter::new(tx, shared.clock.clone(), spec.turn_id.clone());
    let tools = registry::turn_tools(&shared, &spec).await;
    // The login profile's snapshot is taken while the first model request
    // runs, not between the model's first command and that command.
    if shared.config.shell_snapshot_ahead
        && matches!(spec.mode, TurnMode::Chat)
        && tools.get("shell").is_some()
        && let Some(snapshots) = shared.shell_snapshots.clone()
    {
        let env = shared.command_env();
        let mode = spec.live.borrow().policy.sandbox;
        let policy = shared.sandbox_policy(mode, &spec.cwd, spec.thread_id.as_str());
        tokio::spawn(async move { snapshots.prepare(&env, &policy).await });
    }
    let mut lp = Loop {
        shared: &shared,
        spec: &spec,
        cancel: &cancel,
        em: &em,
        messages: history_for_model(&shared, &spec).into(),
        rounds: 0,
        usage: Usage::default(),
        counter: Counter::for_model(&spec.model),
        live: spec.live.clone(),
        grants: spec.grants.clone(),
        tools,
        known: None,
        streamed_tool: None,
        streamed_calls: HashMap::new(),
        output_schema: None,
        store_failure: std::sync::OnceLock::new(),
        overflowed: false,
        checkpoint: tokio::sync::OnceCell::new(),
    };
    let outcome = match &spec.mode {
        TurnMode::Chat => lp.drive(&mut steer).await,
        TurnMode::Compact => lp.compact_now().await,
        TurnMode::Structured(structured) => lp.structured(structured, &mut steer).await,
    };
    let (status, failure) = match outcome {
        Outcome::Completed => (TurnStatus::Completed, None),
        Outcome::Interrupted => (TurnStatus::Interrupted, None),
        Outcome::Failed(kind, message) => {
            em.error_item(lp.rounds, message.clone()).await;
            (TurnStatus::Failed, Some((kind, message)))
        }
        // A budget stop is not a failure: the turn completes, an item says
        // why it stopped, and the actor marks the goal `budget_limited`.
        Outcome::BudgetLimited(message) => {
            em.error_item(lp.rounds, message).await;
            em.send(TurnMsg::BudgetLimited).await;
            (TurnStatus::Completed, None)
        }
    };
    lp.mark_left().await;
    let cost_usd = shared
        .models
        .model_info(&spec.model)
        .map_or(0.0, |info| info.cost.of(&lp.usage));
    em.emit(EventPayload::TurnCompleted {
        turn_id: spec.turn_id.clone(),
        status,
        rounds: lp.rounds,
        usage: lp.usage,
        cost_usd,
        error: match (&failure, status) {
            (Some((_, message)), _) => Some(message.clone()),
            (None, TurnStatus::Interrupted) => Some("interrupted".to_owned()),
            _ => None,
        },
        failure: failure.map(|(kind, _)| kind),
    })
    .await;
}

/// The history as the turn's model may see it: images left out, with a
/// note, for a model the catalog says reads none.
fn history_for_model(shared: &Shared, spec: &TurnSpec) -> Vec<Message> {
    let info = shared.models.model_info(&spec.model);
    if crate::images::takes_images(info.as_ref()) {
        spec.history.clone()
    } else {
        crate::images::left_out(spec.history.clone(), &spec.model)
    }
}

/// Why a model error fails a turn, for clients.
pub(super) fn failure_of(error: &gantry_llm::ModelError) -> TurnFailure {
    use gantry_llm::ModelError;
    match error {
        ModelError::Connect { .. } => TurnFailure::ModelUnreachable,
        ModelError::Auth { .. } | ModelError::Config(_) => TurnFailure::ModelUnusable,
        _ => TurnFailure::Other,
    }
}

impl Loop<'_> {
    async fn drive(&mut self, steer: &mut mpsc::Receiver<Input>) -> Outcome {
        let client = match self.spec.client(self.shared) {
            Ok(c) => c,
            Err(reason) => return Outcome::Failed(TurnFailure::ModelUnusable, reason),
        };
        // Built once: every round sends the same specs.
        let tools: Tools = self.tools.specs().into();
        let max_rounds = self.shared.config.max_rounds;
        let mut compacted_for_overflow = false;
        loop {
            if self.rounds >= max_rounds {
                return Outcome::Failed(
                    TurnFailure::Other,
                    format!(
                        "stopped after {max_rounds} model rounds without a final answer (raise --max-rounds to allow more)"
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
            let instructions = self.instructions();
            let tool_calls = match self.ask_model(client.as_ref(), instructions, &tools).await {
                Ok(calls) => calls,
                // The window was smaller than estimated (a model the
                // catalog does not know): compact once and ask again.
                Err(_) if self.overflowed && !compacted_for_overflow && self.messages.len() > 1 => {
                    compacted_for_overflow = true;
                    let used = self.context_used(&tools);
                    if let Err(outcome) = self
                        .compact(client.as_ref(), "overflow", used, self.limit(), &tools)
                        .await
                    {
                        return outcome;
                    }
                    continue;
                }
                Err(outcome) => return outcome,
            };
            if tool_calls.is_empty() {
                // Final answer, unless a steer arrived meanwhile: closing the
                // channel first means no steer is accepted and then dropped.
                steer.close();
                if !self.take_steers(steer).await {
                    return Outcome::Completed;
                }
                continue;
            }
            let results = self.run_tools(&tool_calls).await;
            self.messages.extend(results);
            if self.cancel.is_cancelled() {
                return Outcome::Interrupted;
            }
            if let Some(outcome) = self.store_failed() {
                return outcome;
            }
            self.take_steers(steer).await;
        }
    }

    /// One model round: the request from the history, the streamed answer
    /// recorded in items and appended to the history. Returns its tool calls.
    pub(super) async fn ask_model(
        &mut self,
        client: &dyn gantry_llm::ModelClient,
        instructions: Option<String>,
        tools: &Tools,
    ) -> Result<Vec<gantry_llm::ToolCall>, Outcome> {
        self.rounds += 1;
        let request = ModelRequest {
            model: self.spec.model.clone(),
            instructions,
            messages: self.messages.clone(),
            tools: tools.clone(),
            reasoning: self.shared.models.reasoning_for(
                &self.spec.model,
                self.spec
                    .reasoning
                    .as_deref()
                    .or(self.shared.config.reasoning.as_deref()),
            ),
            output_schema: self.output_schema.clone(),
            trace_parent: self
                .spec
                .trace
                .as_ref()
                .map(|t| t.model_call_traceparent(self.rounds)),
            ..ModelRequest::default()
        };
        let answer = self.model_round(client, request).await?;
        self.usage.add(&answer.usage);
        self.streamed_calls = answer.streamed;
        // The request (and its clone of the Arc) is gone by now, so this
        // appends in place.
        self.messages.push(Message::Assistant {
            reasoning: answer.reasoning,
            text: answer.text,
            tool_calls: answer.tool_calls.clone(),
        });
        if answer.usage.input_tokens > 0 {
            let tokens = answer.usage.input_tokens + answer.usage.output_tokens;
            self.known = Some((tokens, self.messages.len()));
        }
        Ok(answer.tool_calls)
    }

    /// The thread's instructions, then the skills the model may invoke and
    /// the instructions of skills loaded on request (a model-invoked
    /// skill's are already in the history, as the `skill` tool's result).
    fn instructions(&self) -> Option<String> {
        let skills = read_skills(&self.spec.skills);
        let mut parts: Vec<String> = self.spec.instructions.iter().cloned().collect();
        let catalog = skills.catalog_prompt();
        if !catalog.is_empty() {
            parts.push(catalog);
        }
        for skill in skills.requested() {
            parts.push(skill.instructions(skills.grants(skill)));
        }
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    /// A manual compaction: summarise now, whatever the fill level.
    async fn compact_now(&mut self) -> Outcome {
        let client = match self.spec.client(self.shared) {
            Ok(c) => c,
            Err(reason) => return Outcome::Failed(TurnFailure::ModelUnusable, reason),
        };
        let tools = self.tools.specs();
        let used = self.context_used(&tools);
        let limit = self.limit();
        match self
            .compact(client.as_ref(), "manual", used, limit, &tools)
            .await
        {
            Ok(()) => Outcome::Completed,
            Err(outcome) => outcome,
        }
    }

    /// The turn's end when a tool was refused because the log could not be
    /// saved.
    pub(super) fn store_failed(&self) -> Option<Outcome> {
        self.store_failure.get().map(|cause| {
            Outcome::Failed(
                TurnFailure::StoreUnavailable,
                format!("the event log cannot be saved, so no tool may run: {cause}"),
            )
        })
    }

    /// Moves steered messages into the conversation; true if there were any.
    pub(super) async fn take_steers(&mut self, steer: &mut mpsc::Receiver<Input>) -> bool {
        let mut any = false;
        while let Ok(Input {
            text, key, images, ..
        }) = steer.try_recv()
        {
            self.em
                .user_item(self.rounds, text.clone(), key, images.clone())
                .await;
            self.messages.push(Message::User { text, images });
            any = true;
        }
        any
    }
}

/// The skill set, read. A poisoned lock still holds a whole set (every change
/// is one map operation), so its data is used as is.
pub(crate) fn read_skills(skills: &SharedSkillSet) -> std::sync::RwLockReadGuard<'_, SkillSet> {
    skills.read().unwrap_or_else(|p| p.into_inner())
}

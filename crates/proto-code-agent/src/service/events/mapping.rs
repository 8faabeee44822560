//! What the engine's events mean to an A3S client: each thread event and
//! each engine-wide event as the `AgentEvent`s it stands for. Pure: no
//! engine, no I/O, so every mapping is unit-tested here.
//!
//! Most events are one `AgentEvent`, some none (text deltas and messages
//! are `StreamGenerate`'s business), a few two: a tool call handed to a
//! client is both a tool call and an external task, a call the rules denied
//! both a failed tool call and a permission denial, an interrupted turn
//! both a completed generation and a warning.

use std::collections::HashMap;

use gantry_core::{EngineEvent, EngineEventKind};
use gantry_types::cron::CronEvent;
use gantry_types::lsp::LspEvent;
use gantry_types::memory::MemoryEvent;
use gantry_types::{
    ApprovalDecision, ApprovalRequest, Event, EventPayload, Item, ItemKind, Lane, Refusal,
    ResolvedBy, ThreadId, TurnFailure, TurnStatus, Usage,
};
use serde_json::{Value, to_value};

use crate::names::wire;
use crate::pb;
use crate::pb::agent_event::EventType;
use gantry_core::projection::tool_outcome;

/// One `AgentEvent` under construction.
struct Out {
    kind: EventType,
    message: String,
    data: HashMap<String, String>,
}

impl Out {
    /// An event of `kind` saying `message`, without data yet.
    fn new(kind: EventType, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            data: HashMap::new(),
        }
    }

    /// An `INFO` event; `event` names what happened.
    fn info(event: &str, message: impl Into<String>) -> Self {
        Self::new(EventType::Info, message).with("event", event)
    }

    /// Adds `key` to the data.
    fn with(mut self, key: &str, value: impl ToString) -> Self {
        self.data.insert(key.to_owned(), value.to_string());
        self
    }

    /// Adds `key` to the data when there is a value.
    fn with_opt(self, key: &str, value: Option<impl ToString>) -> Self {
        match value {
            Some(v) => self.with(key, v),
            None => self,
        }
    }

    /// The wire event, of `session` (none for engine-wide events) at `timestamp` (unix ms).
    fn build(self, session: Option<&ThreadId>, timestamp: i64) -> pb::AgentEvent {
        pb::AgentEvent {
            r#type: self.kind as i32,
            session_id: session.map(ToString::to_string),
            timestamp,
            message: self.message,
            data: self.data,
        }
    }
}

/// The `AgentEvent`s of one thread event, in order.
pub(super) fn thread_events(event: &Event) -> Vec<pb::AgentEvent> {
    payload_events(&event.thread_id, &event.payload)
        .into_iter()
        .map(|out| out.build(Some(&event.thread_id), event.ts))
        .collect()
}

/// The `AgentEvent` of one engine-wide event (memory, MCP, agents, skill
/// packages, scheduled jobs, language servers).
pub(super) fn engine_event(event: &EngineEvent) -> pb::AgentEvent {
    let out = match &event.kind {
        EngineEventKind::Memory(m) => memory(m),
        EngineEventKind::McpStartupUpdate(u) => {
            let status = wire_name(to_value(&u.status));
            Out::info(
                "mcp_startup_update",
                format!("MCP server {}: {status}", u.server_name),
            )
            .with("server_name", &u.server_name)
            .with("status", status)
        }
        EngineEventKind::McpStartupComplete(c) => {
            let failed: Vec<&str> = c.failed.iter().map(|f| f.server_name.as_str()).collect();
            Out::info("mcp_startup_complete", "MCP servers started")
                .with("ready", c.ready.join(","))
                .with("failed", failed.join(","))
                .with("cancelled", c.cancelled.join(","))
        }
        EngineEventKind::AgentSaved { agent } => {
            Out::info("agent_saved", format!("agent {} saved", agent.id))
                .with("agent_id", &agent.id)
                .with("name", &agent.name)
        }
        EngineEventKind::AgentDeleted { agent_id } => {
            Out::info("agent_deleted", format!("agent {agent_id} deleted"))
                .with("agent_id", agent_id)
        }
        EngineEventKind::ThreadDeleted { thread_id } => {
            Out::info("thread_deleted", format!("session {thread_id} deleted"))
                .with("session_id", thread_id)
        }
        EngineEventKind::SkillPackage(u) => {
            let status = wire_name(to_value(u.status));
            Out::info(
                "skill_package",
                format!("skill package {} {status}", u.package_name),
            )
            .with("agent_id", &u.agent_id)
            .with("package_name", &u.package_name)
            .with("status", status)
            .with("skills", u.skills.join(","))
        }
        EngineEventKind::Cron(c) => cron(c),
        EngineEventKind::Lsp(l) => lsp(l),
        EngineEventKind::StoreHealth { error: Some(cause) } => Out::new(
            EventType::Error,
            format!("the event log cannot be saved: {cause}"),
        )
        .with("event", "store_failing"),
        EngineEventKind::StoreHealth { error: None } => {
            Out::info("store_recovered", "the event log is saved again")
        }
    };
    out.build(event.thread_id.as_ref(), event.ts)
}

/// A warning that the stream dropped `missed` engine-wide events.
pub(super) fn engine_events_missed(missed: u64, timestamp: i64) -> pb::AgentEvent {
    Out::new(
        EventType::Warning,
        format!("{missed} engine events were dropped: this subscriber fell behind"),
    )
    .with("event", "events_dropped")
    .with("dropped", missed)
    .build(None, timestamp)
}

/// What one thread event of `thread` means, before it is stamped.
fn payload_events(thread: &ThreadId, payload: &EventPayload) -> Vec<Out> {
    match payload {
        EventPayload::TurnStarted { turn } => vec![
            Out::new(EventType::GenerationStarted, "generation started").with("turn_id", &turn.id),
        ],
        EventPayload::TurnCompleted {
            turn_id,
            status,
            rounds,
            usage,
            cost_usd,
            error,
            failure,
        } => turn_completed(
            turn_id.as_str(),
            *status,
            *rounds,
            usage,
            *cost_usd,
            error,
            *failure,
        ),
        EventPayload::ItemStarted { item } => item_started(item),
        EventPayload::ItemCompleted { item } => item_completed(item),
        EventPayload::GoalUpdated { .. }
        | EventPayload::GoalCleared
        | EventPayload::PlanStored { .. }
        | EventPayload::PlanStepUpdated { .. } => planning(payload).into_iter().collect(),
        _ => session_change(thread, payload).into_iter().collect(),
    }
}

/// A change of the session itself: created, destroyed, paused, its policy,
/// settings, todos or lanes.
fn session_change(thread: &ThreadId, payload: &EventPayload) -> Option<Out> {
    let out = match payload {
        EventPayload::ThreadCreated { thread: t } => Out::new(
            EventType::SessionCreated,
            format!("session {} created", t.id),
        )
        .with("model", &t.model)
        .with("workspace", &t.cwd)
        .with_opt("name", t.name.as_ref())
        .with_opt(
            "forked_from",
            t.forked_from.as_ref().map(|f| f.thread_id.clone()),
        ),
        EventPayload::ThreadArchived => Out::new(
            EventType::SessionDestroyed,
            format!("session {thread} destroyed"),
        ),
        EventPayload::ThreadUnarchived => {
            Out::info("session_restored", format!("session {thread} restored"))
        }
        EventPayload::ThreadPaused => {
            Out::info("session_paused", format!("session {thread} paused"))
        }
        EventPayload::ThreadResumed => {
            Out::info("session_resumed", format!("session {thread} resumed"))
        }
        EventPayload::PolicyChanged { policy } => {
            Out::info("policy_changed", "the session's policy changed")
                .with("permissions_enabled", policy.permissions.enabled)
                .with("confirmation_enabled", policy.confirmation.enabled)
                .with("approval", wire_name(to_value(policy.approval)))
                .with("policy", json(to_value(policy)))
        }
        // Only names: the settings may hold the session's model server key.
        EventPayload::ThreadConfigured { settings } => {
            Out::info("session_configured", "the session's settings changed")
                .with("model", &settings.model)
                .with_opt("name", settings.name.as_ref())
        }
        EventPayload::TodosSet { todos } => {
            Out::info("todos_updated", format!("{} todos", todos.len()))
                .with("count", todos.len())
                .with("todos", json(to_value(todos)))
        }
        EventPayload::LaneHandlerSet { handler } => {
            let (lane, mode) = (lane_name(handler.lane), wire_name(to_value(handler.mode)));
            Out::info("lane_handler_set", format!("lane {lane} handled {mode}"))
                .with("lane", lane)
                .with("mode", mode)
                .with("timeout_ms", handler.timeout_ms)
        }
        EventPayload::InputQueued { input } => {
            Out::info("input_queued", "a message waits for the running generation")
                .with("turn_id", &input.turn_id)
        }
        _ => return None,
    };
    Some(out)
}

/// A change of the session's goal or plans.
fn planning(payload: &EventPayload) -> Option<Out> {
    let out = match payload {
        EventPayload::GoalUpdated { goal } => {
            Out::info("goal_updated", format!("goal: {}", goal.objective))
                .with("goal_id", &goal.goal_id)
                .with("objective", &goal.objective)
                .with("status", wire_name(to_value(goal.status)))
        }
        EventPayload::GoalCleared => Out::info("goal_cleared", "the goal was cleared"),
        EventPayload::PlanStored { plan } => {
            Out::info("plan_stored", format!("plan: {}", plan.goal))
                .with("plan_id", &plan.id)
                .with("goal", &plan.goal)
                .with("steps", plan.steps.len())
        }
        EventPayload::PlanStepUpdated {
            plan_id,
            step_id,
            status,
        } => {
            let status = wire_name(to_value(status));
            Out::info(
                "plan_step_updated",
                format!("plan step {step_id}: {status}"),
            )
            .with("plan_id", plan_id)
            .with("step_id", step_id)
            .with("status", status)
        }
        _ => return None,
    };
    Some(out)
}

/// A turn's end: its completion (every status), plus a warning when it was
/// interrupted. A failed turn's cause comes as its error item (`ERROR`).
fn turn_completed(
    turn_id: &str,
    status: TurnStatus,
    rounds: u32,
    usage: &Usage,
    cost_usd: f64,
    error: &Option<String>,
    failure: Option<TurnFailure>,
) -> Vec<Out> {
    let status_name = wire_name(to_value(status));
    let completed = Out::new(
        EventType::GenerationCompleted,
        format!("generation {status_name}"),
    )
    .with("turn_id", turn_id)
    .with("status", &status_name)
    .with("rounds", rounds)
    .with("prompt_tokens", usage.input_tokens)
    .with("completion_tokens", usage.output_tokens)
    .with("total_tokens", usage.input_tokens + usage.output_tokens)
    .with("cost_usd", cost_usd)
    .with_opt("error", error.as_ref())
    .with_opt("failure", failure.map(|f| wire_name(to_value(f))).as_ref());
    let mut outs = vec![completed];
    if status == TurnStatus::Interrupted {
        let reason = error.as_deref().unwrap_or("interrupted");
        outs.push(
            Out::new(
                EventType::Warning,
                format!("generation interrupted: {reason}"),
            )
            .with("event", "generation_interrupted")
            .with("turn_id", turn_id)
            .with("reason", reason),
        );
    }
    outs
}

/// An item's start: a tool call, a confirmation asked, a task handed out.
fn item_started(item: &Item) -> Vec<Out> {
    let mut outs = Vec::new();
    if let Some(call) = item.public_tool_call() {
        outs.push(
            Out::new(
                EventType::ToolCalled,
                format!("tool {} called", wire(&call.name)),
            )
            .with("tool_id", &call.call_id)
            .with("tool_name", wire(&call.name))
            .with("args", &call.arguments)
            .with("turn_id", &item.turn_id)
            .with("item_type", item.kind.name()),
        );
    }
    match &item.kind {
        ItemKind::Approval {
            approval_id,
            request,
            ..
        } => outs.push(
            Out::new(
                EventType::ConfirmationRequired,
                format!(
                    "{} needs confirmation: {}",
                    wire(&request.tool),
                    request.reason
                ),
            )
            .with("tool_id", approval_id)
            .with("call_id", &request.call_id)
            .with("tool_name", wire(&request.tool))
            .with("args", request.arguments.to_string())
            .with("timeout_ms", request.timeout_ms)
            .with("reason", &request.reason)
            .with("lane", lane_name(request.lane))
            .with("on_timeout", wire_name(to_value(request.on_timeout)))
            .with("matched_rules", request.matched_rules.join(","))
            .with_opt("command", request.command.as_ref())
            .with("turn_id", &item.turn_id),
        ),
        ItemKind::ExternalTask {
            task_id,
            lane,
            tool,
            mode,
            payload,
            timeout_ms,
            ..
        } => outs.push(
            Out::new(
                EventType::ExternalTaskPending,
                format!("{tool} waits for an external handler"),
            )
            .with("task_id", task_id)
            .with("lane", lane_name(*lane))
            .with("command_type", wire(tool))
            .with("payload", payload.to_string())
            .with("timeout_ms", timeout_ms)
            .with("mode", wire_name(to_value(mode)))
            .with("turn_id", &item.turn_id),
        ),
        _ => {}
    }
    outs
}

/// An item's end: a tool call's result, a confirmation answered, a task
/// completed, an error, a compaction.
fn item_completed(item: &Item) -> Vec<Out> {
    let mut outs = Vec::new();
    if item.public_tool_call().is_some() {
        outs.extend(tool_completed(item));
    }
    match &item.kind {
        ItemKind::Approval {
            approval_id,
            request,
            decision,
            resolved_by,
        } => outs.push(approval_resolved(
            item,
            approval_id,
            request,
            decision.as_ref(),
            *resolved_by,
        )),
        ItemKind::ExternalTask {
            task_id,
            lane,
            tool,
            result,
            error,
            ..
        } => outs.push(
            Out::new(
                EventType::ExternalTaskCompleted,
                match error {
                    None => format!("{tool} completed"),
                    Some(e) => format!("{tool} failed: {e}"),
                },
            )
            .with("task_id", task_id)
            .with("lane", lane_name(*lane))
            .with("command_type", wire(tool))
            .with("success", error.is_none())
            .with_opt("result", result.as_ref())
            .with_opt("error", error.as_ref())
            .with("turn_id", &item.turn_id),
        ),
        ItemKind::Error { message } => outs.push(
            Out::new(EventType::Error, message.clone())
                .with("error", message)
                .with("turn_id", &item.turn_id),
        ),
        ItemKind::ContextCompaction {
            tokens_before,
            tokens_after,
            trigger,
            ..
        } => outs.push(
            Out::info(
                "context_compacted",
                format!("context {trigger}: {tokens_before} → {tokens_after} tokens"),
            )
            .with("trigger", trigger)
            .with("tokens_before", tokens_before)
            .with("tokens_after", tokens_after),
        ),
        _ => {}
    }
    outs
}

/// A tool call's end, and its denial if the policy refused it.
fn tool_completed(item: &Item) -> Vec<Out> {
    let Some(call) = item.public_tool_call() else {
        return Vec::new();
    };
    let output = call.output.as_deref().unwrap_or("");
    let success = !tool_outcome(item).is_failure();
    let exit_code = match &item.kind {
        ItemKind::CommandExecution { exit_code, .. } => *exit_code,
        _ => None,
    };
    let mut completed = Out::new(
        EventType::ToolCompleted,
        format!(
            "tool {} {}",
            wire(&call.name),
            if success { "succeeded" } else { "failed" }
        ),
    )
    .with("tool_id", &call.call_id)
    .with("tool_name", wire(&call.name))
    .with("success", success)
    .with("output_length", output.len())
    .with_opt("exit_code", exit_code)
    .with("turn_id", &item.turn_id)
    .with("item_type", item.kind.name());
    if !success {
        completed = completed.with("error", output);
    }
    let mut outs = vec![completed];
    if let Some(Refusal::PolicyDenied { reason, .. }) = &call.refused {
        outs.push(
            Out::new(EventType::PermissionDenied, reason.to_owned())
                .with("tool_id", &call.call_id)
                .with("tool_name", wire(&call.name))
                .with("args", &call.arguments)
                .with("reason", reason)
                .with("turn_id", &item.turn_id),
        );
    }
    outs
}

/// How a confirmation ended: answered by a client, by its timeout, or cut
/// short by an interrupt (a warning).
fn approval_resolved(
    item: &Item,
    approval_id: &str,
    request: &ApprovalRequest,
    decision: Option<&ApprovalDecision>,
    resolved_by: Option<ResolvedBy>,
) -> Out {
    let reason = match decision {
        Some(ApprovalDecision::Deny { reason }) => reason.clone().unwrap_or_default(),
        _ => String::new(),
    };
    let approved = decision.is_some_and(ApprovalDecision::runs);
    let out = match (decision, resolved_by) {
        (Some(_), Some(ResolvedBy::Client)) => Out::new(
            EventType::ConfirmationReceived,
            format!(
                "{} {}",
                wire(&request.tool),
                if approved { "approved" } else { "denied" }
            ),
        )
        .with("approved", approved)
        .with("reason", &reason),
        (Some(_), Some(ResolvedBy::Timeout)) => {
            let action = if approved {
                "auto_approved"
            } else {
                "rejected"
            };
            Out::new(
                EventType::ConfirmationTimeout,
                format!("no answer for {} in time: {action}", wire(&request.tool)),
            )
            .with("action_taken", action)
            .with("timeout_ms", request.timeout_ms)
        }
        _ => Out::new(
            EventType::Warning,
            format!("the confirmation of {} was cancelled", wire(&request.tool)),
        )
        .with("event", "confirmation_cancelled"),
    };
    out.with("tool_id", approval_id)
        .with("call_id", &request.call_id)
        .with("tool_name", wire(&request.tool))
        .with("turn_id", &item.turn_id)
}

/// A memory event as its own `MEMORY_*` type.
fn memory(event: &MemoryEvent) -> Out {
    match event {
        MemoryEvent::Stored { memory } => Out::new(
            EventType::MemoryStored,
            format!("memory {} stored", memory.id),
        )
        .with("memory_id", &memory.id)
        .with("content", &memory.content)
        .with("memory_type", memory.memory_type.as_str())
        .with("importance", memory.importance)
        .with("tags", memory.tags.join(","))
        .with("scope", memory.scope.key()),
        MemoryEvent::Recalled { memory } => Out::new(
            EventType::MemoryRecalled,
            format!("memory {} recalled", memory.id),
        )
        .with("memory_id", &memory.id)
        .with("content", &memory.content)
        .with("access_count", memory.access_count)
        .with("scope", memory.scope.key()),
        MemoryEvent::Searched {
            query,
            memory_ids,
            total_count,
        } => {
            let ids: Vec<String> = memory_ids.iter().map(ToString::to_string).collect();
            Out::new(
                EventType::MemoriesSearched,
                format!("{} memories found", memory_ids.len()),
            )
            .with("query", query.query.as_deref().unwrap_or(""))
            .with("tags", query.tags.join(","))
            .with("result_count", memory_ids.len())
            .with("total_count", total_count)
            .with("memory_ids", ids.join(","))
        }
        MemoryEvent::Deleted { memory_id } => Out::new(
            EventType::MemoryCleared,
            format!("memory {memory_id} deleted"),
        )
        .with("memory_id", memory_id)
        .with("cleared_count", 1),
        MemoryEvent::Cleared {
            clear,
            cleared_count,
        } => {
            let classes: Vec<String> = clear
                .classes()
                .iter()
                .map(|c| wire_name(to_value(c)))
                .collect();
            Out::new(
                EventType::MemoryCleared,
                format!("{cleared_count} memories cleared"),
            )
            .with("cleared_count", cleared_count)
            .with("classes", classes.join(","))
            .with("include_shared", clear.include_shared)
        }
    }
}

/// A scheduled job's change or run, as `INFO`.
fn cron(event: &CronEvent) -> Out {
    match event {
        CronEvent::Created { job } | CronEvent::Updated { job } => {
            let what = if matches!(event, CronEvent::Created { .. }) {
                "cron_job_created"
            } else {
                "cron_job_updated"
            };
            Out::info(what, format!("scheduled job {}", job.name))
                .with("job_id", &job.id)
                .with("name", &job.name)
                .with("status", wire_name(to_value(job.status)))
        }
        CronEvent::Deleted { job_id, name } => {
            Out::info("cron_job_deleted", format!("scheduled job {name} deleted"))
                .with("job_id", job_id)
                .with("name", name)
        }
        CronEvent::Started { execution } | CronEvent::Finished { execution } => {
            let what = if matches!(event, CronEvent::Started { .. }) {
                "cron_run_started"
            } else {
                "cron_run_finished"
            };
            Out::info(
                what,
                format!(
                    "scheduled job {}: {}",
                    execution.job_id,
                    wire_name(to_value(execution.status))
                ),
            )
            .with("job_id", &execution.job_id)
            .with("execution_id", &execution.id)
            .with("status", wire_name(to_value(execution.status)))
            .with_opt("exit_code", execution.exit_code)
            .with_opt("error", execution.error.as_ref())
        }
    }
}

/// A language server's start or stop (`INFO`), or crash (`WARNING`).
fn lsp(event: &LspEvent) -> Out {
    match event {
        LspEvent::Started { server } => Out::info(
            "lsp_started",
            format!("{} language server started", server.language),
        )
        .with("language", &server.language)
        .with("root", &server.root),
        LspEvent::Stopped { language, root } => {
            Out::info("lsp_stopped", format!("{language} language server stopped"))
                .with("language", language)
                .with("root", root)
        }
        LspEvent::Crashed { server } => Out::new(
            EventType::Warning,
            format!("{} language server crashed", server.language),
        )
        .with("event", "lsp_crashed")
        .with("language", &server.language)
        .with("root", &server.root)
        .with_opt("error", server.error.as_ref()),
    }
}

/// A lane's wire name (`query`, `execute`, ...).
fn lane_name(lane: Lane) -> String {
    wire_name(to_value(lane))
}

/// A value's serialized name (`"execute"`, `"on-request"`), or its JSON
/// when it is not a plain string (`{"failed":{"error":"..."}}`).
fn wire_name(value: serde_json::Result<Value>) -> String {
    match value {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// A value as JSON text (empty if it cannot be).
fn json(value: serde_json::Result<Value>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests;

//! Engine state as CodeWhale shows it: a thread, its goal, its history
//! (from the projection's conversation), and the answer to a request that
//! creates or returns one thread.

use std::path::PathBuf;

use gantry_core::Engine;
use gantry_core::projection::{Part, Role, conversation};
use gantry_types::{ThreadStatus as GantryStatus, ThreadView};
use serde_json::{Value, json};

use super::policy::approval_name;
use super::{CodeWhale, VERSION};
use crate::wire::{self, SessionSource, ThreadResponse, ThreadStatus};

/// Unix seconds of unix milliseconds (CodeWhale's times are seconds).
pub(crate) fn secs(ms: i64) -> i64 {
    ms.div_euclid(1000)
}

/// The provider that serves `model`: the one configured for it, else the
/// `PROVIDER/` prefix of its id, else `default`.
pub(crate) fn model_provider(engine: &Engine, model: &str) -> String {
    if let Some((provider, _)) = engine.providers().route_of(model) {
        return provider.name;
    }
    match model.split_once('/') {
        Some((provider, _)) if !provider.is_empty() => provider.to_owned(),
        _ => "default".to_owned(),
    }
}

/// A thread as CodeWhale shows it.
pub(crate) fn wire_thread(engine: &Engine, thread: &gantry_types::Thread) -> wire::Thread {
    let status = if thread.archived {
        ThreadStatus::Archived
    } else if thread.paused {
        ThreadStatus::Paused
    } else {
        match thread.status {
            GantryStatus::Idle => ThreadStatus::Idle,
            GantryStatus::Running => ThreadStatus::Running,
            GantryStatus::Failed => ThreadStatus::Failed,
        }
    };
    wire::Thread {
        id: thread.id.0.clone(),
        preview: thread.preview.clone(),
        // Every thread's log is stored (in memory with --storage-backend memory).
        ephemeral: false,
        model_provider: model_provider(engine, &thread.model),
        created_at: secs(thread.created_at),
        updated_at: secs(thread.updated_at),
        status,
        path: None,
        cwd: PathBuf::from(&thread.cwd),
        cli_version: VERSION.to_owned(),
        source: if thread.forked_from.is_some() {
            SessionSource::Fork
        } else {
            SessionSource::Interactive
        },
        name: thread.name.clone(),
    }
}

/// A goal as CodeWhale shows it.
pub(crate) fn wire_goal(goal: &gantry_types::ThreadGoal) -> wire::ThreadGoal {
    use gantry_types::ThreadGoalStatus as G;
    let status = match goal.status {
        G::Active => wire::ThreadGoalStatus::Active,
        G::Paused => wire::ThreadGoalStatus::Paused,
        G::Blocked => wire::ThreadGoalStatus::Blocked,
        G::UsageLimited => wire::ThreadGoalStatus::UsageLimited,
        G::BudgetLimited => wire::ThreadGoalStatus::BudgetLimited,
        G::Complete => wire::ThreadGoalStatus::Complete,
    };
    let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    wire::ThreadGoal {
        thread_id: goal.thread_id.0.clone(),
        goal_id: goal.goal_id.clone(),
        objective: goal.objective.clone(),
        status,
        token_budget: goal.token_budget.map(clamp),
        tokens_used: clamp(goal.tokens_used),
        time_used_seconds: clamp(goal.time_used_seconds),
        created_at: secs(goal.created_at),
        updated_at: secs(goal.updated_at),
    }
}

/// The thread's conversation as CodeWhale's `data.history`: one entry per
/// message (`user`, `assistant`, `tool`, `summary`), its text as `content`
/// and its parts as `item`.
pub(crate) fn history(view: &ThreadView) -> Vec<Value> {
    conversation(view)
        .into_iter()
        .map(|message| {
            let role = match &message.role {
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::ToolResults => "tool",
                Role::CompactionSummary { .. } => "summary",
            };
            let mut content = String::new();
            let parts: Vec<Value> = message
                .parts
                .iter()
                .map(|part| match part {
                    Part::Text(text) => {
                        content.push_str(text);
                        json!({ "type": "text", "text": text })
                    }
                    Part::ToolUse {
                        call_id,
                        name,
                        arguments,
                    } => json!({
                        "type": "tool_use", "call_id": call_id, "name": name, "arguments": arguments
                    }),
                    Part::ToolResult {
                        call_id,
                        output,
                        outcome,
                    } => json!({
                        "type": "tool_result", "call_id": call_id, "output": output,
                        "success": !outcome.is_failure()
                    }),
                })
                .collect();
            json!({
                "id": message.item_id.0,
                "role": role,
                "content": content,
                "item": { "turn_id": message.turn_id.0, "parts": parts },
                "created_at": secs(message.at),
            })
        })
        .collect()
}

/// `data` of an answer about one thread: its history and goal.
pub(crate) fn thread_data(view: &ThreadView) -> Value {
    json!({
        "history": history(view),
        "goal": view.thread.goal.as_ref().map(wire_goal),
    })
}

impl CodeWhale {
    /// The answer `status` about the thread `view`: the thread with its
    /// model, provider, workspace, approval policy, sandbox and history.
    pub(crate) fn thread_answer(&self, status: &str, view: &ThreadView) -> ThreadResponse {
        let engine = self.engine();
        let thread = &view.thread;
        let mut response = ThreadResponse::bare(thread.id.0.clone(), status);
        response.thread = Some(wire_thread(engine, thread));
        response.model = Some(thread.model.clone());
        response.model_provider = Some(model_provider(engine, &thread.model));
        response.cwd = Some(PathBuf::from(&thread.cwd));
        response.approval_policy = Some(approval_name(thread.policy.approval));
        response.sandbox = Some(thread.policy.sandbox.as_str().to_owned());
        response.goal = thread.goal.as_ref().map(wire_goal);
        response.data = thread_data(view);
        response
    }
}

//! Engine state as CodeWhale shows it: a thread, its goal, its history
//! (from the projection's conversation), and the answer to a request that
//! creates or returns one thread.

use std::path::PathBuf;

use gantry_core::Engine;
use gantry_core::projection::{Part, Role, conversation};
use gantry_types::{ThreadStatus as GantryStatus, ThreadView};
use serde_json::{Value, json};

use super::{CodeWhale, VERSION};
use crate::wire::{self, SessionSource, ThreadResponse, ThreadStatus};

/// Thread metadata: `"true"` when the thread was made without
/// `persist_extended_history` (CodeWhale calls it `ephemeral`; Gantry
/// stores every thread's log all the same).
pub(crate) const EPHEMERAL: &str = "codewhale.ephemeral";
/// Thread metadata: the thread a CodeWhale `fork` copied.
pub(crate) const FORKED_FROM: &str = "codewhale.forked_from";

/// The thread `thread` was forked from, if it was.
fn forked_from(thread: &gantry_types::Thread) -> Option<String> {
    thread
        .metadata
        .get(FORKED_FROM)
        .cloned()
        .or_else(|| thread.forked_from.as_ref().map(|f| f.thread_id.0.clone()))
}

/// The item CodeWhale's history starts a fork with.
fn fork_item(parent: &str) -> Value {
    json!({ "from_thread_id": parent, "type": "fork" })
}

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
    let parent = forked_from(thread);
    // A thread nobody spoke to yet: CodeWhale's placeholder (a fork's is
    // the item it starts with).
    let preview = match (&parent, thread.preview.is_empty()) {
        (_, false) => thread.preview.clone(),
        (Some(parent), true) => fork_item(parent).to_string(),
        (None, true) => "New conversation".to_owned(),
    };
    wire::Thread {
        id: thread.id.0.clone(),
        preview,
        ephemeral: thread.metadata.get(EPHEMERAL).map(String::as_str) == Some("true"),
        model_provider: model_provider(engine, &thread.model),
        created_at: secs(thread.created_at),
        updated_at: secs(thread.updated_at),
        status,
        path: None,
        cwd: PathBuf::from(&thread.cwd),
        cli_version: VERSION.to_owned(),
        source: if parent.is_some() {
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
        continuation_count: None,
        created_at: secs(goal.created_at),
        updated_at: secs(goal.updated_at),
        repeated_gap_count: None,
    }
}

/// The thread's conversation as CodeWhale's `data.history`: one entry per
/// message (`user`, `assistant`, `tool`, `summary`), its text as `content`
/// and its parts as `item`.
pub(crate) fn history(view: &ThreadView) -> Vec<Value> {
    // A fork's history starts, as CodeWhale's does, with where it came from.
    let fork = forked_from(&view.thread).map(|parent| {
        let item = fork_item(&parent);
        json!({
            "id": 0,
            "role": "history",
            "content": item.to_string(),
            "item": item,
            "created_at": secs(view.thread.created_at),
        })
    });
    let messages = conversation(view).into_iter().map(|message| {
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
    });
    fork.into_iter().chain(messages).collect()
}

/// `data` of an answer about one thread: its history, its latest
/// checkpoint and its goal.
pub(crate) fn thread_data(view: &ThreadView) -> Value {
    let history = history(view);
    let checkpoint = latest_checkpoint(&history);
    json!({
        "history": history,
        "checkpoint": checkpoint,
        "goal": view.thread.goal.as_ref().map(wire_goal),
    })
}

/// How many characters of a message CodeWhale's checkpoint previews.
const PREVIEW_CHARS: usize = 120;

/// CodeWhale's `checkpoint`: the thread's latest point in its
/// conversation, which the reference saves (as `latest`, replacing the one
/// before) at each user message and shows in every answer about the
/// thread; it restores nothing. Gantry's equivalent is the latest user
/// message of the thread's log; `null` before the first. (A workspace's
/// checkpoints, which CodeWhale does not carry, are Gantry's HTTP API's.)
fn latest_checkpoint(history: &[Value]) -> Value {
    let Some(message) = history.iter().rev().find(|m| m["role"] == "user") else {
        return Value::Null;
    };
    let preview: String = message["content"]
        .as_str()
        .unwrap_or_default()
        .chars()
        .take(PREVIEW_CHARS)
        .collect();
    json!({
        "checkpoint_id": "latest",
        "created_at": message["created_at"],
        "state": {
            "reason": "thread_message",
            "message_id": message["id"],
            "role": "user",
            "preview": preview,
            "updated_at": message["created_at"],
        },
    })
}

impl CodeWhale {
    /// The answer `status` about the thread `view`: the thread with its
    /// model, provider, workspace and history, and the approval policy and
    /// sandbox as the request named them (CodeWhale echoes them; absent
    /// when not named).
    pub(crate) fn thread_answer(
        &self,
        status: &str,
        view: &ThreadView,
        approval_policy: Option<String>,
        sandbox: Option<String>,
    ) -> ThreadResponse {
        let engine = self.engine();
        let thread = &view.thread;
        let mut response = ThreadResponse::bare(thread.id.0.clone(), status);
        response.thread = Some(wire_thread(engine, thread));
        response.model = Some(thread.model.clone());
        response.model_provider = Some(model_provider(engine, &thread.model));
        response.cwd = Some(PathBuf::from(&thread.cwd));
        response.approval_policy = approval_policy;
        response.sandbox = sandbox;
        response.goal = thread.goal.as_ref().map(wire_goal);
        response.data = thread_data(view);
        response
    }
}

//! Engine state as CodeWhale 0.10 shows it. The library projects the
//! record its engine keeps of a thread (`project_thread`): no preview, not
//! ephemeral, `source: api`, `idle`, `running` or `archived`; and passes
//! the record itself, a creation's receipt and a read's whole history on
//! in `data`. Gantry's record, receipt and history snapshot carry what
//! the library reads of them (`id`, `model`, `model_provider`, `workspace`,
//! `title`, `archived`, RFC 3339 times; the receipt's binding; the
//! document's digest) and what the engine knows besides.

use std::path::PathBuf;

use gantry_core::Engine;
use gantry_types::time::iso8601;
use gantry_types::{Thread as EngineThread, ThreadStatus as EngineStatus, ThreadView};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::service::VERSION;
use crate::service::views::{history, model_provider, secs};
use crate::wire::{SessionSource, Thread, ThreadGoal, ThreadResponse, ThreadStatus};

/// What executes threads here, as a receipt names it.
const EXECUTION_SCOPE: &str = "gantry";

/// The thread as the library shows its engine's thread.
pub(super) fn thread(engine: &Engine, t: &EngineThread) -> Thread {
    let status = if t.archived {
        ThreadStatus::Archived
    } else if t.status == EngineStatus::Running {
        ThreadStatus::Running
    } else {
        ThreadStatus::Idle
    };
    Thread {
        id: t.id.0.clone(),
        preview: String::new(),
        ephemeral: false,
        model_provider: model_provider(engine, &t.model),
        created_at: secs(t.created_at),
        updated_at: secs(t.updated_at),
        status,
        path: None,
        cwd: PathBuf::from(&t.cwd),
        cli_version: VERSION.to_owned(),
        source: SessionSource::Api,
        name: t.name.clone(),
    }
}

/// The engine's record of the thread: `data.thread` of a creation, `data`
/// of the other answers about one thread.
pub(super) fn record(engine: &Engine, t: &EngineThread) -> Value {
    json!({
        "id": t.id.0,
        "title": t.name,
        "workspace": t.cwd,
        "model": t.model,
        "model_provider": model_provider(engine, &t.model),
        "archived": t.archived,
        "status": t.status,
        "created_at": iso8601(t.created_at),
        "updated_at": iso8601(t.updated_at),
    })
}

/// The answer `status` about `t`, with `data`: the thread, its model,
/// provider and workspace, as the library answers.
pub(super) fn answer(
    engine: &Engine,
    t: &EngineThread,
    status: &str,
    data: Value,
) -> ThreadResponse {
    let shown = thread(engine, t);
    let mut response = ThreadResponse::bare(t.id.0.clone(), status);
    response.model = Some(t.model.clone());
    response.model_provider = Some(shown.model_provider.clone());
    response.cwd = Some(shown.cwd.clone());
    response.thread = Some(shown);
    response.data = data;
    response
}

/// Hex SHA-256 of `text`.
pub(super) fn digest(text: &str) -> String {
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where this engine keeps its threads, as receipts and snapshots bind it.
fn data_dir(engine: &Engine) -> String {
    engine
        .config()
        .data_dir
        .as_ref()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}

/// The receipt of the operation `key` (the request `request`) that made
/// or resumed `t`.
pub(super) fn receipt(engine: &Engine, key: &str, request: &Value, t: &EngineThread) -> Value {
    json!({
        "version": 1,
        "data_dir": data_dir(engine),
        "execution_scope": EXECUTION_SCOPE,
        "operation_key": key,
        "request_digest": digest(&request.to_string()),
        "history_digest": digest(&format!("{}/{}", t.id.0, t.last_seq)),
        "runtime_thread_id": t.id.0,
        "session_id": t.id.0,
    })
}

/// The thread's whole history as a read's `data.history` (the library's
/// `CanonicalThreadSnapshot`): bound to this engine, its digest changing
/// with every event, its messages those of the seed's `data.history`.
pub(super) fn snapshot(engine: &Engine, view: &ThreadView) -> Value {
    let t = &view.thread;
    let goal = t
        .goal
        .as_ref()
        .map(|g| g.goal_id.clone())
        .unwrap_or_default();
    json!({
        "version": 1,
        "data_dir": data_dir(engine),
        "execution_scope": EXECUTION_SCOPE,
        "runtime_thread_id": t.id.0,
        "saved_session_id": null,
        "saved_document_digest": null,
        "document_digest": digest(&format!("{}/{}", t.id.0, t.last_seq)),
        "session_goal_digest": digest(&goal),
        "session": { "id": t.id.0, "messages": history(view) },
    })
}

/// A goal as 0.10 shows it: the seed's, with its counters.
pub(super) fn goal(goal: &gantry_types::ThreadGoal) -> ThreadGoal {
    let mut shown = crate::service::wire_goal(goal);
    shown.continuation_count = Some(0);
    shown.repeated_gap_count = Some(0);
    shown
}

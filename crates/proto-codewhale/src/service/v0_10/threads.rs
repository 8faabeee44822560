//! 0.10's thread requests. A creation (`create`, `start`, `fork`) carries
//! the client's `operation_key` and is idempotent on it: the thread's id
//! is derived from the key (and, for a fork, its source), so a retry after
//! an uncertain answer, a restart between them included, gets the thread
//! the first attempt made and never a second one. `resume` needs a key
//! too, and changes only what it names.

use std::collections::BTreeMap;
use std::path::PathBuf;

use gantry_core::{CreateThread, EngineError, ThreadQuery};
use gantry_types::{
    Thread as EngineThread, ThreadId, ThreadPolicy, ThreadSettingsPatch, UserInputOffer,
};
use serde_json::{Value, json};

use super::views::{answer, digest, goal, receipt, record, snapshot, thread};
use super::{Refusal, V0_10, operation_key};
use crate::service::threads::{metadata_map, model_id};
use crate::wire::v0_10::ThreadRequest;
use crate::wire::{ThreadForkParams, ThreadResponse, ThreadResumeParams, ThreadStartParams};

/// Listings hold at most this many threads unless asked for fewer.
const DEFAULT_LIST_LIMIT: usize = 50;

impl V0_10<'_> {
    /// Answers a thread request other than a message (see `turns.rs`).
    pub async fn thread_request(&self, req: ThreadRequest) -> Result<ThreadResponse, Refusal> {
        match req {
            // Boxed: each is a large future, and a turn of tokio's stack
            // holds only what is polled (a debug build overflowed it).
            ThreadRequest::Create { metadata } => Box::pin(self.create(metadata)).await,
            ThreadRequest::Start(params) => {
                let request = serde_json::to_value(&params).unwrap_or_default();
                let key = operation_key(params.operation_key.as_deref())?.to_owned();
                let made = Box::pin(self.made(&key, None, params, BTreeMap::new())).await?;
                self.created(&key, &request, &made, "started")
            }
            ThreadRequest::Resume(params) => Box::pin(self.resume(params)).await,
            ThreadRequest::Fork(params) => Box::pin(self.fork(params)).await,
            ThreadRequest::List(params) => {
                let query = ThreadQuery {
                    archived: (!params.include_archived).then_some(false),
                    limit: params.limit.unwrap_or(DEFAULT_LIST_LIMIT),
                    cursor: None,
                };
                let page = self
                    .cw
                    .engine()
                    .threads()
                    .list(&query)
                    .await
                    .map_err(|e| Refusal::runtime_unavailable(e.to_string()))?;
                let mut response = ThreadResponse::bare("list", "ok");
                response.threads = page
                    .threads
                    .iter()
                    .map(|t| thread(self.cw.engine(), t))
                    .collect();
                // Most recently updated first, as the library sorts.
                response.threads.sort_by(|a, b| {
                    b.updated_at
                        .cmp(&a.updated_at)
                        .then_with(|| a.id.cmp(&b.id))
                });
                Ok(response)
            }
            ThreadRequest::Read(params) => {
                let view = self.existing(&params.thread_id).await?;
                let engine = self.cw.engine();
                let data = json!({
                    "thread": record(engine, &view.thread),
                    "history": snapshot(engine, &view),
                });
                Ok(answer(engine, &view.thread, "ok", data))
            }
            ThreadRequest::SetName(params) => {
                let patch = ThreadSettingsPatch {
                    name: Some(Some(params.name)),
                    ..ThreadSettingsPatch::default()
                };
                let changed = self
                    .cw
                    .engine()
                    .threads()
                    .configure(&ThreadId(params.thread_id.clone()), patch)
                    .await
                    .map_err(|e| Refusal::of(e, &params.thread_id))?;
                Ok(self.about(&changed))
            }
            ThreadRequest::Archive { thread_id } => self.archived(&thread_id, true).await,
            ThreadRequest::Unarchive { thread_id } => self.archived(&thread_id, false).await,
            // The library's transports run no goal: a turn toward one could
            // ask what they cannot answer.
            ThreadRequest::GoalSet(_) => Err(Refusal::interactive_unsupported()),
            ThreadRequest::GoalGet(params) => {
                let view = self.existing(&params.thread_id).await?;
                let shown = view.thread.goal.as_ref().map(goal);
                let mut response = ThreadResponse::bare(params.thread_id, "ok");
                response.data = json!({ "goal": shown, "cleared": false });
                response.goal = shown;
                Ok(response)
            }
            ThreadRequest::GoalClear(params) => {
                self.existing(&params.thread_id).await?;
                let id = ThreadId(params.thread_id.clone());
                let old = self
                    .cw
                    .engine()
                    .goals()
                    .clear(&id)
                    .await
                    .map_err(|e| Refusal::of(e, &params.thread_id))?;
                let shown = old.as_ref().map(goal);
                let status = if shown.is_some() { "cleared" } else { "empty" };
                let mut response = ThreadResponse::bare(params.thread_id, status);
                response.data = json!({ "goal": shown, "cleared": shown.is_some() });
                response.goal = shown;
                Ok(response)
            }
            ThreadRequest::GoalRecordProgress(_) => Err(Refusal::runtime_unavailable(
                "goal progress requires producing Engine usage/time receipts; client deltas are \
                 not accounting authority",
            )),
            ThreadRequest::Message(params) => {
                // Messages are turns: the transports hand them to `turns.rs`.
                Err(Refusal::runtime_unavailable(format!(
                    "thread messages use the existing canonical turn transport ({})",
                    params.thread_id
                )))
            }
        }
    }

    /// The thread `id`, or `thread_not_found`.
    pub(super) async fn existing(
        &self,
        id: &str,
    ) -> Result<std::sync::Arc<gantry_types::ThreadView>, Refusal> {
        match self.cw.view(id).await {
            Ok(Some(view)) => Ok(view),
            Ok(None) => Err(Refusal::thread_not_found(id)),
            Err(e) => Err(Refusal::runtime_unavailable(e.to_string())),
        }
    }

    /// An answer about one thread: it, and its record as `data.thread`.
    fn about(&self, t: &EngineThread) -> ThreadResponse {
        let data = json!({ "thread": record(self.cw.engine(), t) });
        answer(self.cw.engine(), t, "ok", data)
    }

    async fn archived(&self, id: &str, archive: bool) -> Result<ThreadResponse, Refusal> {
        self.existing(id).await?;
        let threads = self.cw.engine().threads();
        let thread = ThreadId(id.to_owned());
        let done = if archive {
            threads.archive(&thread).await
        } else {
            threads.unarchive(&thread).await
        };
        done.map_err(|e| Refusal::of(e, id))?;
        let view = self.existing(id).await?;
        Ok(self.about(&view.thread))
    }

    /// `create`: `metadata` holds the key, the workspace and the model;
    /// its other string fields are kept with the thread.
    async fn create(&self, metadata: Value) -> Result<ThreadResponse, Refusal> {
        let Some(fields) = metadata.as_object() else {
            return Err(Refusal::runtime_unavailable(
                "thread/create metadata must carry an operation_key and existing create-thread \
                 fields",
            ));
        };
        let text = |name: &str| fields.get(name).and_then(Value::as_str);
        let key = operation_key(text("operation_key"))?.to_owned();
        let params = ThreadStartParams {
            cwd: text("workspace").map(PathBuf::from),
            model: text("model").map(str::to_owned),
            model_provider: text("model_provider").map(str::to_owned),
            ..ThreadStartParams::default()
        };
        let mut kept = metadata_map(&metadata);
        for taken in ["operation_key", "workspace", "model", "model_provider"] {
            kept.remove(taken);
        }
        let made = self.made(&key, None, params, kept).await?;
        self.created(&key, &metadata, &made, "created")
    }

    /// The thread operation `key` made, made now if it was not yet: a new
    /// thread from `params`, or (with a `source`) a fork of it.
    async fn made(
        &self,
        key: &str,
        source: Option<&ThreadId>,
        params: ThreadStartParams,
        metadata: BTreeMap<String, String>,
    ) -> Result<EngineThread, Refusal> {
        let id = operation_thread(key, source);
        if let Some(view) = self.cw.view(&id.0).await.map_err(unavailable)? {
            return Ok(view.thread.clone());
        }
        let engine = self.cw.engine();
        let made = match source {
            Some(source) => {
                engine
                    .threads()
                    .fork_as(source, None, Some(id.clone()))
                    .await
            }
            None => {
                let mut policy = self
                    .cw
                    .policy_of(
                        ThreadPolicy::default(),
                        params.approval_policy.as_deref(),
                        params.sandbox.as_deref(),
                        true,
                    )
                    .map_err(|e| Refusal::runtime_unavailable(e.to_string()))?;
                // A 0.10 client answers questions (`submit_user_input`).
                policy.user_input.offer = UserInputOffer::Auto;
                let create = CreateThread {
                    id: Some(id.clone()),
                    cwd: params
                        .cwd
                        .clone()
                        .unwrap_or_else(|| self.cw.inner.workspace.clone()),
                    model: model_id(params.model.as_deref(), params.model_provider.as_deref()),
                    policy,
                    metadata,
                    ..CreateThread::default()
                };
                engine.threads().create(create).await
            }
        };
        match made {
            Ok(thread) => Ok(thread),
            // A retry that raced the first attempt: its thread.
            Err(EngineError::AlreadyExists { .. }) => {
                Ok(self.existing(&id.0).await?.thread.clone())
            }
            Err(e) => Err(Refusal::runtime_unavailable(e.to_string())),
        }
    }

    /// The answer to a creation: the thread, and in `data` its receipt and
    /// record.
    fn created(
        &self,
        key: &str,
        request: &Value,
        t: &EngineThread,
        status: &str,
    ) -> Result<ThreadResponse, Refusal> {
        let engine = self.cw.engine();
        let data = json!({
            "receipt": receipt(engine, key, request, t),
            "thread": record(engine, t),
        });
        Ok(answer(engine, t, status, data))
    }

    async fn resume(&self, params: ThreadResumeParams) -> Result<ThreadResponse, Refusal> {
        let request = serde_json::to_value(&params).unwrap_or_default();
        let key = operation_key(params.operation_key.as_deref())?.to_owned();
        let view = self.existing(&params.thread_id).await?;
        if let Some(cwd) = &params.cwd
            && std::fs::canonicalize(cwd).ok() != Some(PathBuf::from(&view.thread.cwd))
        {
            return Err(Refusal::runtime_unavailable(
                "moving a history source to another workspace requires the canonical owner's \
                 explicit admission",
            ));
        }
        let id = ThreadId(params.thread_id.clone());
        self.cw
            .apply_overrides(
                &id,
                model_id(params.model.as_deref(), params.model_provider.as_deref()),
                params.developer_instructions.clone(),
                params.approval_policy.as_deref(),
                params.sandbox.as_deref(),
            )
            .await
            .map_err(|e| Refusal::runtime_unavailable(e.to_string()))?;
        let now = self.existing(&params.thread_id).await?;
        self.created(&key, &request, &now.thread, "resumed")
    }

    async fn fork(&self, params: ThreadForkParams) -> Result<ThreadResponse, Refusal> {
        let request = serde_json::to_value(&params).unwrap_or_default();
        let key = operation_key(params.operation_key.as_deref())?.to_owned();
        self.existing(&params.thread_id).await?;
        let source = ThreadId(params.thread_id.clone());
        let fork = self
            .made(
                &key,
                Some(&source),
                ThreadStartParams::default(),
                BTreeMap::new(),
            )
            .await?;
        // A fork may move to another workspace (a resume may not).
        let patch = ThreadSettingsPatch {
            name: Some(None),
            cwd: params.cwd.as_ref().map(|c| c.display().to_string()),
            ..ThreadSettingsPatch::default()
        };
        self.cw
            .engine()
            .threads()
            .configure(&fork.id, patch)
            .await
            .map_err(|e| Refusal::runtime_unavailable(e.to_string()))?;
        self.cw
            .apply_overrides(
                &fork.id,
                model_id(params.model.as_deref(), params.model_provider.as_deref()),
                params.developer_instructions.clone(),
                params.approval_policy.as_deref(),
                params.sandbox.as_deref(),
            )
            .await
            .map_err(|e| Refusal::runtime_unavailable(e.to_string()))?;
        let now = self.existing(&fork.id.0).await?;
        self.created(&key, &request, &now.thread, "forked")
    }
}

/// The id of the thread operation `key` makes: a new thread's, or a fork
/// of `source`'s. Derived, so the key finds it again after any restart.
fn operation_thread(key: &str, source: Option<&ThreadId>) -> ThreadId {
    let of = match source {
        Some(source) => format!("fork\0{}\0{key}", source.0),
        None => format!("create\0{key}"),
    };
    ThreadId(format!("cw-{}", &digest(&of)[..32]))
}

fn unavailable(e: crate::service::ServiceError) -> Refusal {
    Refusal::runtime_unavailable(e.to_string())
}

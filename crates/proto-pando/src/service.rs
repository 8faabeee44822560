//! The nine methods over the engine, and those Pando's newer sources add
//! (`delegation`, `cron`; `db.compact` through the engine's store upkeep,
//! `kb.relink` refused: Gantry has no knowledge base). A session is a
//! thread whose workspace is the instance's directory; every answer comes
//! from the engine's public API and its projection.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use gantry_core::{
    CompactRequest, CreateThread, Engine, EngineError, IfBusy, ThreadQuery, valid_thread_id,
};
use gantry_types::{Thread, ThreadId, ThreadView};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::delegation::Delegations;
use crate::discovery::RegistryEntry;
use crate::messages::{message_count, messages};
use crate::pubsock::Publisher;
use crate::rpc::{Request, RpcError};
use crate::time::{go_duration, rfc3339_ms};
use crate::wire::{
    CorrelationParams, DELEGATION_PROTOCOL, DbCompactParams, DbCompactResult, DelegationRunParams,
    MessageSendParams, OkResult, PingResult, SessionParams, SessionPayload, StateSyncParams,
    StateSyncResult, method, newer, topic,
};

/// Threads read per page when listing a workspace's sessions.
const PAGE: usize = 200;

/// What the methods share: the engine, the workspace, the instance.
pub(crate) struct Service {
    engine: Engine,
    /// The workspace as the engine records it (canonical).
    workspace: String,
    /// Where new sessions are created.
    dir: PathBuf,
    entry: RegistryEntry,
    started: Instant,
    active: Mutex<Option<String>>,
    publisher: Publisher,
    delegations: Delegations,
    /// Held through a `cronjob.reload`: requests are answered
    /// concurrently, and two reloads interleaving their deletes and
    /// creates would leave both sets of jobs.
    reloading: tokio::sync::Mutex<()>,
}

impl Service {
    pub(crate) fn new(
        engine: Engine,
        dir: PathBuf,
        workspace: String,
        entry: RegistryEntry,
        publisher: Publisher,
    ) -> Arc<Self> {
        Arc::new(Self {
            engine,
            workspace,
            dir,
            entry,
            started: Instant::now(),
            active: Mutex::new(None),
            publisher,
            delegations: Delegations::default(),
            reloading: tokio::sync::Mutex::new(()),
        })
    }

    /// Waits for any other `cronjob.reload` of this instance to finish.
    pub(crate) async fn reload_lock(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.reloading.lock().await
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn instance_id(&self) -> &str {
        &self.entry.lock.instance_id
    }

    pub(crate) fn started_at(&self) -> &str {
        &self.entry.lock.started_at
    }

    pub(crate) fn uptime(&self) -> String {
        go_duration(self.started.elapsed())
    }

    pub(crate) fn active(&self) -> Option<String> {
        // A panicking writer cannot leave an `Option<String>` half-written.
        self.active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The workspace as threads record it.
    pub(crate) fn workspace(&self) -> &str {
        &self.workspace
    }

    /// `dir` (relative to the instance's directory; the directory itself
    /// when empty), canonical, if it is the instance's directory or one
    /// inside it: a Pando client reaches no other.
    pub(crate) fn inside(&self, dir: &str) -> Result<PathBuf, String> {
        if dir.trim().is_empty() {
            return Ok(PathBuf::from(&self.workspace));
        }
        let path = self.dir.join(dir);
        let real = std::fs::canonicalize(&path)
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| format!("{} is not an existing directory", path.display()))?;
        if !real.starts_with(&self.workspace) {
            return Err(format!(
                "{} is outside the instance's directory {}",
                path.display(),
                self.workspace
            ));
        }
        Ok(real)
    }

    /// Whether `thread` is a session of this instance.
    pub(crate) fn owns(&self, thread: &Thread) -> bool {
        thread.cwd == self.workspace
    }

    /// The workspace's threads (not archived), newest first.
    pub(crate) async fn threads(&self) -> Result<Vec<Thread>, EngineError> {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let query = ThreadQuery {
                archived: Some(false),
                limit: PAGE,
                cursor,
            };
            let page = self.engine.threads().list(&query).await?;
            out.extend(page.threads.into_iter().filter(|t| self.owns(t)));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// Every session, newest first.
    pub(crate) async fn sessions(&self) -> Result<Vec<SessionPayload>, EngineError> {
        let mut out = Vec::new();
        for thread in self.threads().await? {
            match self.engine.threads().read(&thread.id).await {
                Ok(view) => out.push(session_payload(&view)),
                // Gone meanwhile.
                Err(EngineError::ThreadNotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The session `id`, if it is one of this instance.
    pub(crate) async fn session(&self, id: &str) -> Result<Option<Arc<ThreadView>>, EngineError> {
        if !valid_thread_id(id) {
            return Ok(None);
        }
        match self.engine.threads().read(&ThreadId(id.to_owned())).await {
            Ok(view) if self.owns(&view.thread) => Ok(Some(view)),
            Ok(_) | Err(EngineError::ThreadNotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Answers one request.
    pub(crate) async fn handle(&self, req: &Request) -> Result<Value, RpcError> {
        let m = req.method.as_str();
        let fail = |reason: &dyn std::fmt::Display| RpcError::handler(m, reason);
        match m {
            method::INSTANCE_PING => Ok(value(&PingResult {
                status: "ok".to_owned(),
                instance_id: self.instance_id().to_owned(),
                uptime: self.uptime(),
                accepts_delegations: true,
                delegation_protocol: DELEGATION_PROTOCOL,
            })),
            method::SESSION_LIST => {
                let sessions = self.sessions().await.map_err(|e| fail(&e))?;
                Ok(value(&sessions))
            }
            method::STATE_SYNC => {
                // Optional params: the instance serves one project.
                if req.params.is_some() {
                    params::<StateSyncParams>(m, req)?;
                }
                let sessions = self.sessions().await.map_err(|e| fail(&e))?;
                Ok(value(&StateSyncResult {
                    sessions,
                    active_session_id: self.active(),
                    instance_id: self.instance_id().to_owned(),
                }))
            }
            method::INSTANCE_INFO => {
                let count = self.threads().await.map_err(|e| fail(&e))?.len();
                let mut info = serde_json::to_value(&self.entry).unwrap_or_else(|_| json!({}));
                info["version"] = json!(env!("CARGO_PKG_VERSION"));
                info["model"] = json!(self.engine.providers().default_model());
                info["session_count"] = json!(count);
                info["uptime"] = json!(self.uptime());
                Ok(info)
            }
            method::SESSION_GET => {
                let id = session_id(m, req)?;
                match self.session(&id).await.map_err(|e| fail(&e))? {
                    Some(view) => Ok(value(&session_payload(&view))),
                    None => Err(fail(&format!("session not found: {id}"))),
                }
            }
            method::MESSAGE_LIST => {
                let id = session_id(m, req)?;
                let view = self.session(&id).await.map_err(|e| fail(&e))?;
                Ok(value(&view.map(|v| messages(&v)).unwrap_or_default()))
            }
            method::SESSION_ACTIVATE => {
                let id = session_id(m, req)?;
                let Some(view) = self.session(&id).await.map_err(|e| fail(&e))? else {
                    return Err(fail(&format!("session not found: {id}")));
                };
                *self.active.lock().unwrap_or_else(|p| p.into_inner()) = Some(id.clone());
                let payload = serde_json::to_value(session_payload(&view)).unwrap_or_default();
                self.publisher
                    .publish(topic::SESSION_ACTIVATED, Some(&id), payload)
                    .await;
                Ok(value(&OkResult { ok: true }))
            }
            method::SESSION_INTERRUPT => {
                let id = session_id(m, req)?;
                if self.session(&id).await.map_err(|e| fail(&e))?.is_none() {
                    return Err(fail(&format!("session not found: {id}")));
                }
                self.engine
                    .turns()
                    .interrupt(&ThreadId(id))
                    .await
                    .map_err(|e| fail(&e))?;
                Ok(value(&OkResult { ok: true }))
            }
            method::MESSAGE_SEND => {
                let p: MessageSendParams = params(m, req)?;
                if p.session_id.is_empty() {
                    return Err(fail(&"session_id is required"));
                }
                if p.content.trim().is_empty() {
                    return Err(fail(&"content is required"));
                }
                self.send(&p).await.map_err(|e| fail(&e))?;
                Ok(value(&OkResult { ok: true }))
            }
            _ => self.handle_newer(req).await,
        }
    }

    /// The methods of Pando's newer sources.
    async fn handle_newer(&self, req: &Request) -> Result<Value, RpcError> {
        let m = req.method.as_str();
        let fail = |reason: &dyn std::fmt::Display| RpcError::handler(m, reason);
        match m {
            newer::DELEGATION_RUN => {
                let p: DelegationRunParams = params(m, req)?;
                let result = self.delegations.run(self, p).await.map_err(|e| fail(&e))?;
                Ok(value(&result))
            }
            newer::DELEGATION_CANCEL => {
                let p: CorrelationParams = params(m, req)?;
                self.delegations
                    .cancel(&self.engine, &p.correlation_id)
                    .await
                    .map_err(|e| fail(&e))?;
                Ok(value(&OkResult { ok: true }))
            }
            newer::DELEGATION_STATUS => {
                let p: CorrelationParams = params(m, req)?;
                Ok(value(&self.delegations.status(&p.correlation_id)))
            }
            newer::CRONJOB_RELOAD => {
                let config = crate::cron::decode(req.params.as_ref()).map_err(|e| fail(&e))?;
                let result = crate::cron::reload(self, config)
                    .await
                    .map_err(|e| fail(&e))?;
                Ok(value(&result))
            }
            newer::DB_COMPACT => {
                // Optional params, as Pando's handler reads them.
                let p: DbCompactParams = match req.params {
                    Some(_) => params(m, req)?,
                    None => DbCompactParams::default(),
                };
                let done = self
                    .engine
                    .storage()
                    .compact(CompactRequest {
                        incremental: p.incremental,
                        enable_auto_vacuum: p.enable_auto_vacuum,
                    })
                    .await
                    .map_err(|e| fail(&e))?;
                let size = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
                Ok(value(&DbCompactResult {
                    mode: done.mode.as_str().to_owned(),
                    size_before: size(done.size_before),
                    size_after: size(done.size_after),
                    freed: done.freed(),
                }))
            }
            newer::KB_RELINK => Err(RpcError::not_served(
                "kb.relink: Gantry has no knowledge base (Pando's Remembrances wiki links), so there are no links to rebuild",
            )),
            _ => Err(RpcError::method_not_found()),
        }
    }

    /// Starts a turn (or queues one behind the running turn), creating the
    /// session first when it does not exist yet.
    async fn send(&self, p: &MessageSendParams) -> Result<(), String> {
        if !valid_thread_id(&p.session_id) {
            return Err(format!(
                "invalid session_id {:?}: letters, digits, `-`, `_`, `.`, `:` only, at most 128",
                p.session_id
            ));
        }
        let id = ThreadId(p.session_id.clone());
        match self.engine.threads().read(&id).await {
            Ok(view) if !self.owns(&view.thread) => {
                return Err(format!(
                    "session {} belongs to another workspace ({})",
                    id.0, view.thread.cwd
                ));
            }
            Ok(_) => {}
            Err(EngineError::ThreadNotFound(_)) => {
                let create = CreateThread {
                    cwd: self.dir.clone(),
                    id: Some(id.clone()),
                    ..CreateThread::default()
                };
                match self.engine.threads().create(create).await {
                    // Another send created it meanwhile.
                    Ok(_) | Err(EngineError::AlreadyExists { .. }) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
            Err(e) => return Err(e.to_string()),
        }
        self.engine
            .turns()
            .send(&id, p.content.clone(), IfBusy::Queue)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// A session as Pando shows it.
pub(crate) fn session_payload(view: &ThreadView) -> SessionPayload {
    let thread = &view.thread;
    SessionPayload {
        id: thread.id.0.clone(),
        title: thread
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| thread.preview.clone()),
        updated_at: rfc3339_ms(thread.updated_at),
        message_count: message_count(view),
    }
}

/// The request's params as `T`; missing or ill-typed ones are
/// `<method>: invalid params: ...`.
fn params<T: DeserializeOwned>(method: &str, req: &Request) -> Result<T, RpcError> {
    let Some(params) = &req.params else {
        return Err(RpcError::handler(
            method,
            "invalid params: params are required",
        ));
    };
    serde_json::from_value(params.clone())
        .map_err(|e| RpcError::handler(method, format!("invalid params: {e}")))
}

/// The `session_id` every session method needs.
fn session_id(method: &str, req: &Request) -> Result<String, RpcError> {
    let p: SessionParams = params(method, req)?;
    if p.session_id.is_empty() {
        return Err(RpcError::handler(method, "session_id is required"));
    }
    Ok(p.session_id)
}

/// An answer's JSON (its types always serialize).
fn value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

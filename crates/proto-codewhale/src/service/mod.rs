//! The protocol over the engine, whatever the transport: thread requests,
//! app requests, one-shot prompts and approval answers, each answered from
//! the engine's public API (`threads()`, `turns()`, `safety()`, `goals()`,
//! `providers()`) and its projection. HTTP (`crate::http`) and stdio
//! (`crate::stdio`) only frame what this answers.

mod app;
mod approvals;
mod config;
mod policy;
mod prompt;
mod threads;
pub(crate) mod v0_10;
mod views;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use gantry_core::{Engine, EngineError};
use gantry_types::{ApprovalPolicy, SandboxMode};

pub(crate) use views::wire_goal;

/// Why a request could not be done (domain answers such as `missing` are
/// answers, not errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceError {
    /// The request asks for something the engine refuses (a bad value, an
    /// archived thread, a busy one): the client can fix it.
    Invalid(String),
    /// The engine failed (the store, a shutdown).
    Internal(String),
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServiceError::Invalid(m) | ServiceError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ServiceError {}

impl From<EngineError> for ServiceError {
    fn from(e: EngineError) -> Self {
        // On the error's variant, never its wording.
        match e {
            EngineError::InvalidInput(_)
            | EngineError::Archived(_)
            | EngineError::Busy { .. }
            | EngineError::NotSteerable { .. }
            | EngineError::AlreadyExists { .. }
            | EngineError::NotFound { .. }
            | EngineError::TurnNotFound { .. }
            | EngineError::ThreadNotFound(_)
            | EngineError::AlreadyResolved { .. }
            | EngineError::Unsupported(_) => ServiceError::Invalid(e.to_string()),
            _ => ServiceError::Internal(e.to_string()),
        }
    }
}

/// Defaults of threads created over CodeWhale that name none, set through
/// `config_set approval_policy|sandbox_mode` and kept in the engine's
/// settings (namespace [`SETTINGS_NAMESPACE`]), so a restart keeps them.
#[derive(Debug, Clone, Default)]
struct Defaults {
    /// The policy, and the text the client set it with (CodeWhale hands
    /// the value back as it was given: `on-request` stays `on-request`).
    approval: Option<(ApprovalPolicy, String)>,
    sandbox: Option<SandboxMode>,
    /// Seconds an agent's question waits (0: until answered).
    user_input_timeout: Option<u64>,
}

/// The engine settings namespace of CodeWhale's thread defaults.
pub const SETTINGS_NAMESPACE: &str = "codewhale";

impl Defaults {
    /// As stored: CodeWhale's own names, so they read back with its parsers.
    fn to_json(&self) -> serde_json::Value {
        let mut doc = serde_json::Map::new();
        if let Some((_, text)) = &self.approval {
            doc.insert("approval_policy".into(), text.clone().into());
        }
        if let Some(sandbox) = self.sandbox {
            doc.insert("sandbox_mode".into(), sandbox.as_str().into());
        }
        if let Some(seconds) = self.user_input_timeout {
            doc.insert("user_input_timeout_seconds".into(), seconds.into());
        }
        doc.into()
    }

    /// What was stored; a value that no longer parses is left unset.
    fn from_json(doc: &serde_json::Value) -> Self {
        let text = |key: &str| doc.get(key).and_then(serde_json::Value::as_str);
        Self {
            approval: text("approval_policy")
                .and_then(|t| Some((policy::parse_approval(t).ok()?, t.to_owned()))),
            sandbox: text("sandbox_mode").and_then(|t| policy::parse_sandbox(t).ok()),
            user_input_timeout: doc
                .get("user_input_timeout_seconds")
                .and_then(serde_json::Value::as_u64),
        }
    }
}

/// The CodeWhale protocol over one engine. Cheap to clone; every transport
/// of a process shares one, so both see the same defaults.
#[derive(Clone)]
pub struct CodeWhale {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    workspace: PathBuf,
    defaults: RwLock<Defaults>,
    /// Held from a change of the defaults to its write, so the stored
    /// document is always the latest.
    saving: tokio::sync::Mutex<()>,
    /// Whether `config` may not change the provider registry (see
    /// [`CodeWhale::lock_providers`]).
    providers_locked: std::sync::atomic::AtomicBool,
    /// The config file the process was started with, as `app capabilities`
    /// reports it ([`CodeWhale::set_config_path`]).
    config_path: std::sync::OnceLock<PathBuf>,
    /// The thread of each question a 0.10 turn of this server is waiting
    /// on: `submit_user_input` names only the question.
    questions: std::sync::Mutex<std::collections::HashMap<String, gantry_types::ThreadId>>,
}

impl CodeWhale {
    /// The protocol over `engine`, with the thread defaults stored by
    /// earlier runs; threads that name no workspace get `workspace`.
    pub async fn open(engine: Engine, workspace: PathBuf) -> Result<Self, ServiceError> {
        let defaults = engine
            .settings()
            .get(SETTINGS_NAMESPACE)
            .await?
            .map(|doc| Defaults::from_json(&doc))
            .unwrap_or_default();
        Ok(Self {
            inner: Arc::new(Inner {
                engine,
                workspace,
                defaults: RwLock::new(defaults),
                saving: tokio::sync::Mutex::new(()),
                providers_locked: std::sync::atomic::AtomicBool::new(false),
                config_path: std::sync::OnceLock::new(),
                questions: Default::default(),
            }),
        })
    }

    /// The config file the process was started with (`--config`), which
    /// `app capabilities` names as `config_path` (`null` without one).
    pub fn set_config_path(&self, path: PathBuf) {
        let _ = self.inner.config_path.set(path);
    }

    /// Refuses `config set|unset providers.*` from now on: a listener whose
    /// callers need no token must not let one re-point a provider's
    /// `base_url` (and send the provider's key there) or replace its key.
    pub fn lock_providers(&self) {
        self.inner
            .providers_locked
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// `Err` when the provider registry is locked ([`CodeWhale::lock_providers`]).
    fn check_providers_open(&self, key: &str) -> Result<(), ServiceError> {
        if self
            .inner
            .providers_locked
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return Err(ServiceError::Invalid(format!(
                "{key}: providers cannot be changed over a listener without a token \
                 (give the listener a token, or set them in the config file)"
            )));
        }
        Ok(())
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// `thread` asked the question `request_id`.
    fn note_question(&self, request_id: &str, thread: &gantry_types::ThreadId) {
        self.questions()
            .insert(request_id.to_owned(), thread.clone());
    }

    /// The thread that asked the question `request_id`, if a turn of this
    /// server saw it asked.
    fn asked_by(&self, request_id: &str) -> Option<gantry_types::ThreadId> {
        self.questions().get(request_id).cloned()
    }

    /// `thread`'s turn ended: its questions wait no more.
    fn forget_questions(&self, thread: &gantry_types::ThreadId) {
        self.questions().retain(|_, asker| asker != thread);
    }

    fn questions(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, gantry_types::ThreadId>> {
        // A map of plain values: a panicking writer leaves it usable.
        self.inner
            .questions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn defaults(&self) -> Defaults {
        // A panicking writer cannot leave two plain values half-written.
        self.inner
            .defaults
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Changes the defaults and stores them.
    async fn update_defaults(
        &self,
        change: impl FnOnce(&mut Defaults),
    ) -> Result<(), ServiceError> {
        let _saving = self.inner.saving.lock().await;
        let doc = {
            let mut defaults = self
                .inner
                .defaults
                .write()
                .unwrap_or_else(|p| p.into_inner());
            change(&mut defaults);
            defaults.to_json()
        };
        self.engine()
            .settings()
            .put(SETTINGS_NAMESPACE, &doc)
            .await?;
        Ok(())
    }
}

/// The Gantry version threads report as their `cli_version`.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

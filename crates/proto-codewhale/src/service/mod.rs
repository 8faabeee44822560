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
            | EngineError::Unsupported(_) => ServiceError::Invalid(e.to_string()),
            _ => ServiceError::Internal(e.to_string()),
        }
    }
}

/// Defaults of threads created over CodeWhale that name none, set through
/// `config_set approval_policy|sandbox_mode` (for this process).
#[derive(Debug, Clone, Copy, Default)]
struct Defaults {
    approval: Option<ApprovalPolicy>,
    sandbox: Option<SandboxMode>,
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
}

impl CodeWhale {
    /// The protocol over `engine`; threads that name no workspace get `workspace`.
    pub fn new(engine: Engine, workspace: PathBuf) -> Self {
        Self {
            inner: Arc::new(Inner {
                engine,
                workspace,
                defaults: RwLock::new(Defaults::default()),
            }),
        }
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    fn defaults(&self) -> Defaults {
        // A panicking writer cannot leave two plain values half-written.
        *self
            .inner
            .defaults
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn update_defaults(&self, change: impl FnOnce(&mut Defaults)) {
        change(
            &mut self
                .inner
                .defaults
                .write()
                .unwrap_or_else(|p| p.into_inner()),
        );
    }
}

/// The Gantry version threads report as their `cli_version`.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

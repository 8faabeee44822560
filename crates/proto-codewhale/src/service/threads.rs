//! `ThreadRequest`s on the engine. Domain outcomes are answers with a
//! status (`missing` for a thread that is not there where CodeWhale says
//! so, `ok` without a `thread` where it does); only what the engine
//! refuses or fails at is a [`ServiceError`].

use gantry_core::{CreateThread, EngineError, IfBusy, ThreadQuery, UserInput};
use gantry_types::{ThreadId, ThreadPolicy, ThreadSettingsPatch};
use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::policy::{parse_approval, parse_sandbox};
use super::views::{EPHEMERAL, FORKED_FROM, thread_data, wire_goal, wire_thread};
use super::{CodeWhale, ServiceError};
use crate::wire::{
    self, EventFrame, ThreadForkParams, ThreadRequest, ThreadResponse, ThreadResumeParams,
    ThreadStartParams,
};

/// Listings return at most this many threads unless asked for fewer.
const DEFAULT_LIST_LIMIT: usize = 50;

impl CodeWhale {
    /// Answers a [`ThreadRequest`].
    pub async fn thread_request(&self, req: ThreadRequest) -> Result<ThreadResponse, ServiceError> {
        self.thread_request_traced(req, None).await
    }

    /// Answers a [`ThreadRequest`] that came with the W3C `traceparent`
    /// `trace_parent` (already checked): the turn a message starts keeps it.
    pub async fn thread_request_traced(
        &self,
        req: ThreadRequest,
        trace_parent: Option<String>,
    ) -> Result<ThreadResponse, ServiceError> {
        match req {
            ThreadRequest::Create { metadata } => {
                let params = ThreadStartParams::default();
                self.start(params, metadata_map(&metadata), "created").await
            }
            ThreadRequest::Start(params) => self.start(params, BTreeMap::new(), "started").await,
            ThreadRequest::Resume(params) => self.resume(params).await,
            ThreadRequest::Fork(params) => self.fork(params).await,
            ThreadRequest::List(params) => {
                let query = ThreadQuery {
                    archived: if params.include_archived {
                        None
                    } else {
                        Some(false)
                    },
                    limit: params.limit.unwrap_or(DEFAULT_LIST_LIMIT),
                    cursor: None,
                };
                let page = self.engine().threads().list(&query).await?;
                let mut response = ThreadResponse::bare("list", "ok");
                response.threads = page
                    .threads
                    .iter()
                    .map(|t| wire_thread(self.engine(), t))
                    .collect();
                Ok(response)
            }
            ThreadRequest::Read(params) => {
                let Some(view) = self.view(&params.thread_id).await? else {
                    let mut response = ThreadResponse::bare(params.thread_id, "ok");
                    response.data = json!({ "history": [], "checkpoint": null, "goal": null });
                    return Ok(response);
                };
                let mut response = ThreadResponse::bare(params.thread_id, "ok");
                response.thread = Some(wire_thread(self.engine(), &view.thread));
                response.goal = view.thread.goal.as_ref().map(wire_goal);
                response.data = thread_data(&view);
                Ok(response)
            }
            ThreadRequest::SetName(params) => {
                let id = ThreadId(params.thread_id.clone());
                let patch = ThreadSettingsPatch {
                    name: Some(Some(params.name)),
                    ..ThreadSettingsPatch::default()
                };
                let mut response = ThreadResponse::bare(params.thread_id, "ok");
                match self.engine().threads().configure(&id, patch).await {
                    Ok(thread) => response.thread = Some(wire_thread(self.engine(), &thread)),
                    Err(EngineError::ThreadNotFound(_)) => {}
                    Err(e) => return Err(e.into()),
                }
                Ok(response)
            }
            ThreadRequest::GoalSet(params) => {
                let id = ThreadId(params.thread_id.clone());
                let budget = match params.token_budget {
                    Some(n) => Some(u64::try_from(n).map_err(|_| {
                        ServiceError::Invalid("token_budget: must not be negative".to_owned())
                    })?),
                    None => None,
                };
                match self
                    .engine()
                    .goals()
                    .set(&id, params.objective, budget)
                    .await
                {
                    Ok(goal) => {
                        let goal = wire_goal(&goal);
                        let mut response = ThreadResponse::bare(params.thread_id, "ok");
                        response.events =
                            vec![EventFrame::ThreadGoalUpdated { goal: goal.clone() }];
                        response.data = json!({ "goal": goal });
                        response.goal = Some(goal);
                        Ok(response)
                    }
                    Err(EngineError::ThreadNotFound(_)) => {
                        Ok(ThreadResponse::missing(params.thread_id))
                    }
                    Err(e) => Err(e.into()),
                }
            }
            ThreadRequest::GoalGet(params) => {
                let id = ThreadId(params.thread_id.clone());
                let goal = match self.engine().goals().get(&id).await {
                    Ok(goal) => goal.as_ref().map(wire_goal),
                    Err(EngineError::ThreadNotFound(_)) => None,
                    Err(e) => return Err(e.into()),
                };
                let mut response = ThreadResponse::bare(params.thread_id, "ok");
                response.data = json!({ "goal": goal });
                response.goal = goal;
                Ok(response)
            }
            ThreadRequest::GoalClear(params) => {
                let id = ThreadId(params.thread_id.clone());
                let cleared = match self.engine().goals().clear(&id).await {
                    Ok(old) => old.is_some(),
                    Err(EngineError::ThreadNotFound(_)) => false,
                    Err(e) => return Err(e.into()),
                };
                let status = if cleared { "cleared" } else { "empty" };
                let mut response = ThreadResponse::bare(params.thread_id.clone(), status);
                if cleared {
                    response.events = vec![EventFrame::ThreadGoalCleared {
                        thread_id: params.thread_id,
                    }];
                }
                response.data = json!({ "cleared": cleared });
                Ok(response)
            }
            ThreadRequest::Archive { thread_id } => {
                let id = ThreadId(thread_id.clone());
                match self.engine().threads().archive(&id).await {
                    // Archived it is, whether it was there or not (as the
                    // reference answers).
                    Ok(()) | Err(EngineError::ThreadNotFound(_)) => {
                        Ok(ThreadResponse::bare(thread_id, "archived"))
                    }
                    Err(e) => Err(e.into()),
                }
            }
            ThreadRequest::Unarchive { thread_id } => {
                let id = ThreadId(thread_id.clone());
                match self.engine().threads().unarchive(&id).await {
                    Ok(()) | Err(EngineError::ThreadNotFound(_)) => {
                        Ok(ThreadResponse::bare(thread_id, "unarchived"))
                    }
                    Err(e) => Err(e.into()),
                }
            }
            ThreadRequest::Message {
                thread_id,
                input,
                if_busy,
            } => {
                let id = ThreadId(thread_id.clone());
                let if_busy = match if_busy {
                    Some(wire::IfBusy::Steer) => IfBusy::Steer,
                    Some(wire::IfBusy::Queue) | None => IfBusy::Queue,
                };
                let input = UserInput {
                    text: input,
                    trace_parent,
                    ..UserInput::default()
                };
                match self.engine().turns().send_input(&id, input, if_busy).await {
                    Ok(turn) => {
                        let mut response = ThreadResponse::bare(thread_id, "accepted");
                        response.data = json!({ "turn_id": turn.0 });
                        Ok(response)
                    }
                    Err(EngineError::ThreadNotFound(_)) => Ok(ThreadResponse::missing(thread_id)),
                    Err(e) => Err(e.into()),
                }
            }
        }
    }

    /// The thread `id`, `None` when it is not there.
    pub(crate) async fn view(
        &self,
        id: &str,
    ) -> Result<Option<std::sync::Arc<gantry_types::ThreadView>>, ServiceError> {
        match self.engine().threads().read(&ThreadId(id.to_owned())).await {
            Ok(view) => Ok(Some(view)),
            Err(EngineError::ThreadNotFound(_)) => Ok(None),
            // An id no thread could have is not there either.
            Err(EngineError::InvalidInput(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn start(
        &self,
        params: ThreadStartParams,
        metadata: BTreeMap<String, String>,
        status: &str,
    ) -> Result<ThreadResponse, ServiceError> {
        let policy = self.policy_of(
            ThreadPolicy::default(),
            params.approval_policy.as_deref(),
            params.sandbox.as_deref(),
            true,
        )?;
        let mut metadata = metadata;
        if !params.persist_extended_history {
            metadata.insert(EPHEMERAL.to_owned(), "true".to_owned());
        }
        let create = CreateThread {
            cwd: params
                .cwd
                .clone()
                .unwrap_or_else(|| self.inner.workspace.clone()),
            model: model_id(params.model.as_deref(), params.model_provider.as_deref()),
            policy,
            metadata,
            ..CreateThread::default()
        };
        let thread = self.engine().threads().create(create).await?;
        let view = self.engine().threads().read(&thread.id).await?;
        // The policy is echoed as the client named it (a Gantry extension
        // of `start`; the reference's start takes none).
        Ok(self.thread_answer(status, &view, params.approval_policy, params.sandbox))
    }

    async fn resume(&self, params: ThreadResumeParams) -> Result<ThreadResponse, ServiceError> {
        if self.view(&params.thread_id).await?.is_none() {
            let mut response = ThreadResponse::missing(params.thread_id);
            response.approval_policy = params.approval_policy;
            response.sandbox = params.sandbox;
            return Ok(response);
        }
        let id = ThreadId(params.thread_id.clone());
        self.apply_overrides(
            &id,
            model_id(params.model.as_deref(), params.model_provider.as_deref()),
            params.developer_instructions,
            params.approval_policy.as_deref(),
            params.sandbox.as_deref(),
        )
        .await?;
        let view = self.engine().threads().read(&id).await?;
        // CodeWhale echoes the policy and sandbox a resume named, as named.
        Ok(self.thread_answer("resumed", &view, params.approval_policy, params.sandbox))
    }

    async fn fork(&self, params: ThreadForkParams) -> Result<ThreadResponse, ServiceError> {
        if self.view(&params.thread_id).await?.is_none() {
            let mut response = ThreadResponse::missing(params.thread_id);
            response.approval_policy = params.approval_policy;
            response.sandbox = params.sandbox;
            return Ok(response);
        }
        let source = ThreadId(params.thread_id.clone());
        let fork = self.engine().threads().fork(&source, None).await?;
        // A fork is a new conversation: CodeWhale's has no name, says
        // `source: fork` and where it came from, and is ephemeral unless
        // asked otherwise.
        let mut metadata = std::collections::BTreeMap::new();
        metadata.insert(FORKED_FROM.to_owned(), Some(params.thread_id.clone()));
        metadata.insert(
            EPHEMERAL.to_owned(),
            (!params.persist_extended_history).then(|| "true".to_owned()),
        );
        let patch = ThreadSettingsPatch {
            name: Some(None),
            metadata,
            ..ThreadSettingsPatch::default()
        };
        self.engine().threads().configure(&fork.id, patch).await?;
        self.apply_overrides(
            &fork.id,
            model_id(params.model.as_deref(), params.model_provider.as_deref()),
            params.developer_instructions,
            params.approval_policy.as_deref(),
            params.sandbox.as_deref(),
        )
        .await?;
        let view = self.engine().threads().read(&fork.id).await?;
        // The reference's fork takes no policy into its answer.
        Ok(self.thread_answer("forked", &view, None, None))
    }

    /// Applies what a resume or fork asks to change.
    pub(super) async fn apply_overrides(
        &self,
        id: &ThreadId,
        model: Option<String>,
        instructions: Option<String>,
        approval: Option<&str>,
        sandbox: Option<&str>,
    ) -> Result<(), ServiceError> {
        if model.is_some() || instructions.is_some() {
            let patch = ThreadSettingsPatch {
                model,
                instructions: instructions.map(Some),
                ..ThreadSettingsPatch::default()
            };
            self.engine().threads().configure(id, patch).await?;
        }
        if approval.is_some() || sandbox.is_some() {
            let view = self.engine().threads().read(id).await?;
            let policy = self.policy_of(view.thread.policy.clone(), approval, sandbox, false)?;
            self.engine().safety().set_policy(id, policy).await?;
        }
        Ok(())
    }

    /// `base` with the approval policy and sandbox asked for; for a new
    /// thread (`new`), the configured defaults fill what is not asked.
    pub(super) fn policy_of(
        &self,
        mut base: ThreadPolicy,
        approval: Option<&str>,
        sandbox: Option<&str>,
        new: bool,
    ) -> Result<ThreadPolicy, ServiceError> {
        let defaults = self.defaults();
        match approval {
            Some(text) => base.approval = parse_approval(text).map_err(ServiceError::Invalid)?,
            None if new => {
                base.approval = defaults
                    .approval
                    .map_or(base.approval, |(policy, _)| policy);
            }
            None => {}
        }
        match sandbox {
            Some(text) => base.sandbox = parse_sandbox(text).map_err(ServiceError::Invalid)?,
            None if new => base.sandbox = defaults.sandbox.unwrap_or(base.sandbox),
            None => {}
        }
        if let (true, Some(seconds)) = (new, defaults.user_input_timeout) {
            base.user_input.timeout_ms = seconds.saturating_mul(1000);
        }
        if let (true, Some(seconds)) = (new, defaults.user_input_timeout) {
            base.user_input.timeout_ms = seconds.saturating_mul(1000);
        }
        Ok(base)
    }
}

/// The model id asked for: `PROVIDER/MODEL` when both are given (unless
/// the model names its provider already).
pub(super) fn model_id(model: Option<&str>, provider: Option<&str>) -> Option<String> {
    let model = model.map(str::trim).filter(|m| !m.is_empty())?;
    match provider.map(str::trim).filter(|p| !p.is_empty()) {
        Some(provider) if !model.starts_with(&format!("{provider}/")) => {
            Some(format!("{provider}/{model}"))
        }
        _ => Some(model.to_owned()),
    }
}

/// A create's `metadata`: the string values of an object (others as JSON).
pub(super) fn metadata_map(metadata: &Value) -> BTreeMap<String, String> {
    let Some(object) = metadata.as_object() else {
        return BTreeMap::new();
    };
    object
        .iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), text)
        })
        .collect()
}

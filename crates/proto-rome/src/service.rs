//! What the routes do, whatever carries them: runs and forks as streams of
//! lines, interrupts, and the agent questions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use gantry_core::{
    CreateThread, Engine, EngineError, IfBusy, StructuredRequest, ThreadFeed, UserInput,
};
use gantry_types::{
    PermissionRules, ThreadId, ThreadPolicy, ThreadSettingsPatch, ThreadView, TurnId,
};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::agents::{self, Profiles, RomeAgent};
use crate::mapper::TurnMapper;
use crate::sessions::{
    AGENT_KEY, FORK_LABEL_KEY, PARENT_TURN_KEY, Sessions, THREAD_KEY, keyed_session,
};
use crate::stream::{self, Outlet};
use crate::wire::{ForkMode, ForkRequest, Message, RunRequest, ThreadContext};

/// Why a request gets no stream: each maps to an HTTP status.
#[derive(Debug)]
pub enum Refused {
    /// The agent or session named does not exist (404).
    NotFound(String),
    /// The request is wrong (400).
    Invalid(String),
    /// The engine failed (500).
    Engine(EngineError),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::NotFound(m) | Refused::Invalid(m) => f.write_str(m),
            Refused::Engine(e) => write!(f, "{e}"),
        }
    }
}

impl From<EngineError> for Refused {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::InvalidInput(m) => Refused::Invalid(m),
            e => Refused::Engine(e),
        }
    }
}

/// The Rome runner over an engine: one per process, cheap to clone.
#[derive(Clone)]
pub struct Rome {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    workspace: PathBuf,
    profiles: Profiles,
    sessions: Arc<Sessions>,
}

/// A turn to run, once its session is free.
struct Plan {
    agent: RomeAgent,
    thread: ThreadId,
    /// How to create the session, if it does not exist yet.
    create: Option<CreateThread>,
    /// The workspace the session must have.
    cwd: Option<PathBuf>,
    /// What the model gets.
    text: String,
    /// What the caller said.
    user_prompt: String,
    /// Whether the turn announces its session (ordinary turns; not forks).
    session_init: bool,
    /// The request's W3C `traceparent` (already checked), kept with the turn.
    trace_parent: Option<String>,
}

impl Rome {
    /// Sessions without a `workingDir` work in `workspace`, and a
    /// `workingDir` must lie inside it; `profiles` add tools and output
    /// schemas to agents by name.
    pub fn new(engine: Engine, workspace: PathBuf, profiles: Profiles) -> Self {
        // Compared with canonical `workingDir`s.
        let workspace = std::fs::canonicalize(&workspace).unwrap_or(workspace);
        Self {
            inner: Arc::new(Inner {
                engine,
                workspace,
                profiles,
                sessions: Arc::new(Sessions::default()),
            }),
        }
    }

    /// Runs a turn; its lines as they come. The session is continued by
    /// `sessionId`, else by agent and `channelThreadKey`, else new. The
    /// turn keeps `trace_parent`, the request's W3C `traceparent` (already
    /// checked), if it came with one.
    pub async fn run(
        &self,
        req: RunRequest,
        trace_parent: Option<String>,
    ) -> Result<mpsc::Receiver<Bytes>, Refused> {
        non_empty(&req.prompt)?;
        let cwd = workspace(
            &self.inner.workspace,
            req.working_dir.as_deref(),
            req.thread_context.as_ref(),
        )?;
        let agent = self.agent(&req.agent_name).await?;
        let key = req.channel_thread_key.filter(|k| !k.is_empty());
        let (thread, create) = match req.session_id.filter(|s| !s.is_empty()) {
            Some(id) => {
                let thread = ThreadId(id);
                self.session_of(&agent, &thread, None).await?;
                (thread, None)
            }
            None => {
                let thread = match &key {
                    Some(key) => keyed_session(&req.agent_name, key),
                    None => ThreadId::new(),
                };
                let create = self.new_session(&agent, &thread, key.as_deref(), cwd.clone());
                (thread, Some(create))
            }
        };
        let plan = Plan {
            agent,
            thread,
            create,
            cwd,
            text: turn_text(
                &req.prompt,
                req.context_suffix.as_deref(),
                req.shared_context,
            ),
            user_prompt: req.prompt,
            session_init: true,
            trace_parent,
        };
        Ok(self.spawn(plan))
    }

    /// Runs a turn on a fork of a session of the same agent and key; the
    /// turn keeps `trace_parent` as [`Rome::run`]'s does.
    pub async fn fork(
        &self,
        req: ForkRequest,
        trace_parent: Option<String>,
    ) -> Result<mpsc::Receiver<Bytes>, Refused> {
        non_empty(&req.prompt)?;
        let cwd = workspace(
            &self.inner.workspace,
            req.working_dir.as_deref(),
            req.thread_context.as_ref(),
        )?;
        let agent = self.agent(&req.agent_name).await?;
        let source = ThreadId(req.source_session_id.clone());
        self.session_of(&agent, &source, Some(&req.channel_thread_key))
            .await?;
        let fork = self.inner.engine.threads().fork(&source, None).await?;
        self.set_up_fork(&fork.id, &req).await?;
        let plan = Plan {
            agent,
            thread: fork.id,
            create: None,
            cwd,
            text: req.prompt.clone(),
            user_prompt: req.prompt,
            session_init: false,
            trace_parent,
        };
        Ok(self.spawn(plan))
    }

    /// Gives a fork its mode's tool surface and records its lineage.
    async fn set_up_fork(&self, fork: &ThreadId, req: &ForkRequest) -> Result<(), Refused> {
        let engine = &self.inner.engine;
        if req.mode == ForkMode::Isolated {
            let view = engine.threads().read(fork).await?;
            let policy = ThreadPolicy {
                permissions: PermissionRules::allow_nothing(),
                ..view.thread.policy.clone()
            };
            engine.safety().set_policy(fork, policy).await?;
        }
        let mut metadata = BTreeMap::new();
        for (key, value) in [
            (FORK_LABEL_KEY, &req.label),
            (PARENT_TURN_KEY, &req.parent_turn_id),
        ] {
            if let Some(value) = value {
                metadata.insert(key.to_owned(), Some(value.clone()));
            }
        }
        if !metadata.is_empty() {
            let patch = ThreadSettingsPatch {
                metadata,
                ..ThreadSettingsPatch::default()
            };
            engine.threads().configure(fork, patch).await?;
        }
        Ok(())
    }

    /// Interrupts a running turn and returns once it has ended; false if
    /// it is not running here.
    pub async fn interrupt(&self, turn: &str) -> Result<bool, Refused> {
        let Some(thread) = self.inner.sessions.running(&TurnId::from(turn)) else {
            return Ok(false);
        };
        Ok(self
            .inner
            .engine
            .turns()
            .interrupt(&thread)
            .await?
            .is_some())
    }

    /// The agent named `name`, if there is one: `(id, model)`.
    pub async fn agent_info(
        &self,
        name: &str,
    ) -> Result<Option<(String, Option<String>)>, Refused> {
        let found = agents::find(&self.inner.engine, &self.inner.profiles, name).await?;
        Ok(found.map(|a| (a.agent.id.to_string(), a.agent.model)))
    }

    /// Whether agent `name` may call `action`; `None` for an unknown agent.
    pub async fn may_call(&self, name: &str, action: &str) -> Result<Option<bool>, Refused> {
        let Some(agent) = agents::find(&self.inner.engine, &self.inner.profiles, name).await?
        else {
            return Ok(None);
        };
        let allowed =
            agents::may_call(&self.inner.engine, &agent, &self.inner.workspace, action).await?;
        Ok(Some(allowed))
    }

    async fn agent(&self, name: &str) -> Result<RomeAgent, Refused> {
        agents::find(&self.inner.engine, &self.inner.profiles, name)
            .await?
            .ok_or_else(|| Refused::NotFound(format!("agent `{name}` not found")))
    }

    /// Checks that `thread` is a session of `agent` (under `key`, if given).
    async fn session_of(
        &self,
        agent: &RomeAgent,
        thread: &ThreadId,
        key: Option<&str>,
    ) -> Result<Arc<ThreadView>, Refused> {
        let view = match self.inner.engine.threads().read(thread).await {
            Ok(view) => view,
            Err(EngineError::ThreadNotFound(_)) => {
                return Err(Refused::NotFound(format!("session `{thread}` not found")));
            }
            Err(e) => return Err(e.into()),
        };
        let meta = &view.thread.metadata;
        let owner = meta.get(AGENT_KEY).map(String::as_str);
        let ours = match owner {
            Some(owner) => owner == agent.agent.name || owner == agent.agent.id.as_str(),
            None => view.thread.agent_id.as_ref() == Some(&agent.agent.id),
        };
        if !ours {
            return Err(Refused::NotFound(format!(
                "session `{thread}` is not a session of agent `{}`",
                agent.agent.name
            )));
        }
        if let Some(key) = key
            && meta.get(THREAD_KEY).map(String::as_str) != Some(key)
        {
            return Err(Refused::NotFound(format!(
                "session `{thread}` of agent `{}` does not run under channel thread key `{key}`",
                agent.agent.name
            )));
        }
        Ok(view)
    }

    fn new_session(
        &self,
        agent: &RomeAgent,
        thread: &ThreadId,
        key: Option<&str>,
        cwd: Option<PathBuf>,
    ) -> CreateThread {
        let mut metadata = BTreeMap::from([(AGENT_KEY.to_owned(), agent.agent.name.clone())]);
        if let Some(key) = key {
            metadata.insert(THREAD_KEY.to_owned(), key.to_owned());
        }
        CreateThread {
            cwd: cwd.unwrap_or_else(|| self.inner.workspace.clone()),
            name: Some(match key {
                Some(key) => format!("{} {key}", agent.agent.name),
                None => agent.agent.name.clone(),
            }),
            policy: agent.policy(),
            agent: Some(agent.agent.id.clone()),
            id: Some(thread.clone()),
            metadata,
            ..CreateThread::default()
        }
    }

    /// Runs `plan` in a task of its own; the receiver gets its lines.
    fn spawn(&self, plan: Plan) -> mpsc::Receiver<Bytes> {
        let (mut outlet, rx) = Outlet::new();
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let mut slot = inner.sessions.acquire(&plan.thread).await;
            if outlet.is_closed() {
                return;
            }
            outlet.start_clock();
            let (turn, feed, view) = match inner.start(&plan).await {
                Ok(started) => started,
                Err(e) => {
                    let error = format!("the turn could not start: {e}");
                    return outlet.refused(&plan.thread, &plan.user_prompt, error).await;
                }
            };
            slot.running(&turn);
            let start = Message::TurnStart {
                turn_id: turn.to_string(),
                session_id: plan.thread.to_string(),
                user_prompt: plan.user_prompt.clone(),
            };
            let init = Message::SessionInit {
                session_id: plan.thread.to_string(),
                system_prompt: view.thread.instructions.clone(),
                user_prompt: plan.user_prompt.clone(),
                project_path: view.thread.cwd.clone(),
                turn_id: turn.to_string(),
            };
            let mut opening = outlet.send(&start).await;
            if plan.session_init && opening.is_ok() {
                opening = outlet.send(&init).await;
            }
            if opening.is_err() {
                if let Err(e) = inner.engine.turns().interrupt(&plan.thread).await {
                    tracing::warn!(error = %e, "cannot interrupt a Rome turn nobody reads");
                }
                return;
            }
            // Accounting names the provider that serves the model: the
            // model's id may name none.
            let engine = inner.engine.clone();
            let mapper = TurnMapper::new(turn.clone(), view.thread.model.clone()).with_provider_of(
                Box::new(move |model| {
                    let (provider, id) = engine.providers().route_of(model)?;
                    Some((provider.name, id))
                }),
            );
            stream::follow(&inner.engine, &plan.thread, &turn, feed, mapper, &outlet).await;
            drop(slot);
        });
        rx
    }
}

impl Inner {
    /// Creates or moves the session as `plan` says, then starts its turn:
    /// the turn, a feed from before its start, the session as it was.
    async fn start(
        &self,
        plan: &Plan,
    ) -> Result<(TurnId, ThreadFeed, Arc<ThreadView>), EngineError> {
        let threads = self.engine.threads();
        let mut view = match threads.read(&plan.thread).await {
            Ok(view) => view,
            Err(EngineError::ThreadNotFound(_)) if plan.create.is_some() => {
                let create = plan.create.clone().unwrap_or_default();
                threads.create(create).await?;
                threads.read(&plan.thread).await?
            }
            Err(e) => return Err(e),
        };
        if let Some(cwd) = &plan.cwd
            && Path::new(&view.thread.cwd) != cwd.as_path()
        {
            let patch = ThreadSettingsPatch {
                cwd: Some(cwd.to_string_lossy().into_owned()),
                ..ThreadSettingsPatch::default()
            };
            threads.configure(&plan.thread, patch).await?;
            view = threads.read(&plan.thread).await?;
        }
        let feed = self
            .engine
            .feeds()
            .follow(&plan.thread, view.thread.last_seq + 1)
            .await?;
        let turn = match &plan.agent.profile.output_schema {
            Some(schema) => {
                let request = StructuredRequest {
                    trace_parent: plan.trace_parent.clone(),
                    ..StructuredRequest::new(plan.text.clone(), schema.clone())
                };
                self.engine
                    .structured()
                    .start(&plan.thread, request)
                    .await?
            }
            None => {
                let input = UserInput {
                    text: plan.text.clone(),
                    trace_parent: plan.trace_parent.clone(),
                    ..UserInput::default()
                };
                self.engine
                    .turns()
                    .send_input(&plan.thread, input, IfBusy::Queue)
                    .await?
            }
        };
        Ok((turn, feed, view))
    }
}

fn non_empty(prompt: &str) -> Result<(), Refused> {
    if prompt.trim().is_empty() {
        return Err(Refused::Invalid("prompt: empty".to_owned()));
    }
    Ok(())
}

/// The session's workspace: `workingDir` (which must be an existing
/// directory inside `root`, the runner's workspace: a caller may not point
/// the agent at the rest of the machine), else the thread context's project
/// when it is one inside `root`.
fn workspace(
    root: &Path,
    working_dir: Option<&str>,
    context: Option<&ThreadContext>,
) -> Result<Option<PathBuf>, Refused> {
    if let Some(dir) = working_dir.filter(|d| !d.is_empty()) {
        return match std::fs::canonicalize(dir) {
            Ok(path) if path.is_dir() && path.starts_with(root) => Ok(Some(path)),
            Ok(path) if path.is_dir() => Err(Refused::Invalid(format!(
                "workingDir: `{dir}` lies outside this runner's workspace `{}`",
                root.display()
            ))),
            _ => Err(Refused::Invalid(format!(
                "workingDir: `{dir}` is not an existing directory"
            ))),
        };
    }
    let project = context.and_then(|c| c.project_path.as_deref());
    Ok(project
        .and_then(|p| std::fs::canonicalize(p).ok())
        .filter(|p| p.is_dir() && p.starts_with(root)))
}

/// What the model gets: the prompt, the host's suffix, the shared context.
fn turn_text(
    prompt: &str,
    suffix: Option<&str>,
    shared: Option<serde_json::Map<String, Value>>,
) -> String {
    let mut text = prompt.to_owned();
    if let Some(suffix) = suffix.filter(|s| !s.trim().is_empty()) {
        text.push_str("\n\n");
        text.push_str(suffix);
    }
    if let Some(shared) = shared.filter(|s| !s.is_empty()) {
        text.push_str("\n\n<shared_context>\n");
        text.push_str(&Value::Object(shared).to_string());
        text.push_str("\n</shared_context>");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_gets_the_suffix_and_shared_context_after_the_prompt() {
        let shared = serde_json::json!({"user": "ada"});
        let text = turn_text(
            "hi",
            Some("(sent from telegram)"),
            shared.as_object().cloned(),
        );
        assert_eq!(
            text,
            "hi\n\n(sent from telegram)\n\n<shared_context>\n{\"user\":\"ada\"}\n</shared_context>"
        );
        assert_eq!(turn_text("hi", Some(" "), None), "hi");
    }

    #[test]
    fn a_working_dir_must_exist() {
        let err = workspace(Path::new("/"), Some("/no/such/dir"), None).unwrap_err();
        assert!(err.to_string().contains("/no/such/dir"), "{err}");
        let context = ThreadContext {
            project_path: Some("/no/such/dir".into()),
            ..ThreadContext::default()
        };
        assert_eq!(
            workspace(Path::new("/"), None, Some(&context)).unwrap(),
            None
        );
    }

    #[test]
    fn a_working_dir_must_lie_inside_the_workspace() {
        let root = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(root.path()).unwrap();
        std::fs::create_dir(root.join("app")).unwrap();
        let inside = root.join("app").display().to_string();
        assert_eq!(
            workspace(&root, Some(&inside), None).unwrap(),
            Some(root.join("app"))
        );
        let err = workspace(&root, Some("/"), None).unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
        // Up and out through `..` is the same directory as `/`.
        let climbing = format!("{inside}/../../../../../../../..");
        assert!(workspace(&root, Some(&climbing), None).is_err());
        let context = ThreadContext {
            project_path: Some("/".into()),
            ..ThreadContext::default()
        };
        assert_eq!(workspace(&root, None, Some(&context)).unwrap(), None);
        // A link the agent planted inside the workspace leads out of it.
        std::os::unix::fs::symlink("/", root.join("out")).unwrap();
        let linked = root.join("out").display().to_string();
        let err = workspace(&root, Some(&linked), None).unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
    }
}

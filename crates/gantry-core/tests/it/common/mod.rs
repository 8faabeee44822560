//! A real engine over a real SQLite file, real tools in a temp workspace, and
//! the scripted model server over HTTP.
#![allow(dead_code)]

pub(crate) mod gated_store;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gantry_core::{
    CreateThread, Engine, EngineBuilder, EngineConfig, ModelResolver, Notification, SingleModel,
    Subscription,
};
use gantry_llm::ClientConfig;
use gantry_llm::RetryPolicy;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_store::SqliteStore;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::{Event, EventPayload, ItemKind, Thread, ThreadView, TurnId, TurnStatus};

pub(crate) struct Harness {
    pub engine: Engine,
    pub llm: MockLlm,
    pub dir: tempfile::TempDir,
    pub thread: Thread,
}

impl Harness {
    pub(crate) async fn new(steps: Vec<Step>) -> Self {
        Self::with_config(steps, EngineConfig::default()).await
    }

    pub(crate) async fn with_config(steps: Vec<Step>, config: EngineConfig) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("ws")).expect("workspace");
        let llm = MockLlm::start(Script::new(steps)).expect("mock llm");
        let engine = engine_at(dir.path(), &llm, config).await;
        let thread = engine
            .threads()
            .create(CreateThread {
                cwd: dir.path().join("ws"),
                model: Some("test-model".into()),
                instructions: Some("be brief".into()),
                name: None,
                ..Default::default()
            })
            .await
            .expect("create thread");
        Self {
            engine,
            llm,
            dir,
            thread,
        }
    }

    pub(crate) fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// Subscribes to the whole thread and sends `text`; the subscription
    /// and the turn the message started.
    pub(crate) async fn start_turn(&self, text: &str) -> (Subscription, TurnId) {
        self.send_from(1, text).await
    }

    /// Subscribes from the thread's next seq, sends `text`, and collects every
    /// notification until the turn ends.
    pub(crate) async fn run_turn(&self, text: &str) -> (TurnId, Vec<Notification>) {
        let view = self
            .engine
            .threads()
            .read(&self.thread.id)
            .await
            .expect("read");
        let (mut sub, turn) = self.send_from(view.thread.last_seq + 1, text).await;
        let seen = until_turn_ends(&mut sub, &turn).await;
        (turn, seen)
    }

    /// Subscribes from `seq`, then sends `text`.
    async fn send_from(&self, seq: u64, text: &str) -> (Subscription, TurnId) {
        let sub = self
            .engine
            .feeds()
            .subscribe(&self.thread.id, seq)
            .await
            .expect("subscribe");
        let turn = self
            .engine
            .turns()
            .send(&self.thread.id, text, gantry_core::IfBusy::Reject)
            .await
            .expect("send");
        (sub, turn)
    }

    pub(crate) async fn view(&self) -> Arc<ThreadView> {
        self.engine
            .threads()
            .read(&self.thread.id)
            .await
            .expect("read")
    }
}

/// An engine over the SQLite file in `dir`, talking to `llm` with fast retries.
pub(crate) async fn engine_at(dir: &Path, llm: &MockLlm, config: EngineConfig) -> Engine {
    let mut llm_config = ClientConfig::new(llm.base_url());
    llm_config.retry = fast_retries();
    let client = OpenAiChatClient::new(llm_config).expect("client");
    engine_with(dir, Arc::new(SingleModel(Arc::new(client))), config).await
}

/// An engine over the SQLite file in `dir` with the given model resolver.
pub(crate) async fn engine_with(
    dir: &Path,
    models: Arc<dyn ModelResolver>,
    config: EngineConfig,
) -> Engine {
    let store = SqliteStore::open(&dir.join("gantry.db"))
        .await
        .expect("store");
    EngineBuilder::new(Arc::new(store), models)
        .config(config)
        .start()
        .await
        .expect("engine")
}

/// What the model was told by the last tool result in request `n`.
pub(crate) fn last_tool_result(llm: &MockLlm, n: usize) -> String {
    let body = &llm.requests()[n].body;
    let tool = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rfind(|m| m["role"] == "tool"))
        .unwrap_or_else(|| panic!("request {n} has no tool result: {body}"));
    tool["content"].as_str().unwrap_or_default().to_owned()
}

/// The tool names offered in request `n`.
pub(crate) fn offered_tools(llm: &MockLlm, n: usize) -> Vec<String> {
    llm.requests()[n].body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        base_delay: std::time::Duration::from_millis(1),
        max_delay: std::time::Duration::from_millis(5),
        ..RetryPolicy::default()
    }
}

/// Collects notifications until `turn` completes (inclusive).
pub(crate) async fn until_turn_ends(sub: &mut Subscription, turn: &TurnId) -> Vec<Notification> {
    let mut seen = Vec::new();
    while let Some(n) = sub.next().await {
        let done = matches!(&n, Notification::Event(e)
            if matches!(&e.payload, EventPayload::TurnCompleted { turn_id, .. } if turn_id == turn));
        seen.push(n);
        if done {
            return seen;
        }
    }
    panic!("subscription ended before turn {turn} completed");
}

/// Waits for the first notification matching `pred`.
pub(crate) async fn wait_for(
    sub: &mut Subscription,
    mut pred: impl FnMut(&Notification) -> bool,
) -> Notification {
    while let Some(n) = sub.next().await {
        if pred(&n) {
            return n;
        }
    }
    panic!("subscription ended before the awaited notification");
}

pub(crate) fn events(seen: &[Notification]) -> Vec<Arc<Event>> {
    seen.iter()
        .filter_map(|n| match n {
            Notification::Event(e) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// The status a turn ended with, from its turn_completed event.
pub(crate) fn turn_status(seen: &[Notification]) -> TurnStatus {
    events(seen)
        .iter()
        .find_map(|e| match &e.payload {
            EventPayload::TurnCompleted { status, .. } => Some(*status),
            _ => None,
        })
        .expect("turn_completed")
}

/// Completed items' kinds, in order.
pub(crate) fn completed_kinds(seen: &[Notification]) -> Vec<ItemKind> {
    events(seen)
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ItemCompleted { item } => Some(item.kind.clone()),
            _ => None,
        })
        .collect()
}

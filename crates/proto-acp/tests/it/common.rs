//! `gantry acp`'s loop over a real engine (in-memory store) whose default
//! model is the scripted mock LLM over real HTTP, and a line client on
//! the other end of an in-memory pipe.

use std::sync::Arc;
use std::time::Duration;

use gantry_core::{Engine, EngineBuilder, Providers, ProvidersConfig};
use gantry_store::MemoryStore;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::{ProviderConfig, ProviderKind, SandboxMode};
use proto_acp::{AcpOptions, ClientTools};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// Fails a wait that would otherwise hang the test.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(30);

pub(crate) struct Setup {
    pub engine: Engine,
    /// The model server (dropping it stops the server).
    pub llm: MockLlm,
    pub dir: tempfile::TempDir,
}

impl Setup {
    /// The workspace (canonical).
    pub(crate) fn ws(&self) -> String {
        std::fs::canonicalize(self.dir.path().join("ws"))
            .expect("workspace")
            .to_string_lossy()
            .into_owned()
    }
}

/// An engine whose model answers `steps`, in order.
pub(crate) async fn start(steps: Vec<Step>) -> Setup {
    start_with(steps, None).await
}

/// The same, with the client serving the tools' I/O through `tools`.
pub(crate) async fn start_with(steps: Vec<Step>, tools: Option<Arc<ClientTools>>) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("ws")).expect("workspace");
    let llm = MockLlm::start(Script::new(steps)).expect("mock llm");
    let store = Arc::new(MemoryStore::new());
    let mut mock = ProviderConfig::new("mock", ProviderKind::OpenaiChat);
    mock.base_url = Some(llm.base_url());
    mock.api_key = Some("sk-test-secret-key-123456".into());
    mock.models = vec!["test-model".into()];
    let providers = Arc::new(
        Providers::load(
            store.clone(),
            ProvidersConfig {
                providers: vec![mock],
                default_model: Some("mock/test-model".into()),
                ..ProvidersConfig::default()
            },
        )
        .await
        .expect("providers"),
    );
    let mut builder = EngineBuilder::new(store, providers.clone()).providers(providers);
    if let Some(tools) = tools {
        builder = builder.tool_host_source(tools);
    }
    let engine = builder.start().await.expect("engine");
    Setup { engine, llm, dir }
}

/// The client's end of one connection.
pub(crate) struct Client {
    write: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    next_id: u64,
    /// Every notification and agent request seen so far.
    pub seen: Vec<Value>,
}

/// Connects a client to a new `serve_stdio` over `engine`.
pub(crate) fn connect(engine: &Engine) -> Client {
    connect_with(engine, None)
}

/// The same, the client serving the tools' I/O through `tools`.
pub(crate) fn connect_with(engine: &Engine, tools: Option<Arc<ClientTools>>) -> Client {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (agent_in, agent_out) = tokio::io::split(theirs);
    let options = AcpOptions {
        sandbox: SandboxMode::DangerFullAccess,
        client_tools: tools,
        ..AcpOptions::default()
    };
    tokio::spawn(proto_acp::serve_stdio(
        engine.clone(),
        options,
        agent_in,
        agent_out,
    ));
    let (read, write) = tokio::io::split(ours);
    Client {
        write,
        lines: BufReader::new(read).lines(),
        next_id: 0,
        seen: Vec::new(),
    }
}

impl Client {
    /// Writes `bytes` as they are.
    pub(crate) async fn send_raw(&mut self, bytes: &[u8]) {
        self.write.write_all(bytes).await.expect("write");
    }

    pub(crate) async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.write.write_all(line.as_bytes()).await.expect("write");
    }

    pub(crate) async fn line(&mut self) -> Value {
        let line = tokio::time::timeout(HANG_GUARD, self.lines.next_line())
            .await
            .expect("the agent went quiet")
            .expect("read")
            .expect("the agent closed the connection");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a request and reads until its answer (`result` or `error`),
    /// answering the agent's own requests with `answer`.
    pub(crate) async fn call(
        &mut self,
        method: &str,
        params: Value,
        mut answer: impl FnMut(&Value) -> Value,
    ) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let msg = self.line().await;
            if msg.get("method").is_none() && msg["id"] == json!(id) {
                return msg;
            }
            if msg.get("method").is_some() && msg.get("id").is_some() {
                let result = answer(&msg);
                let reply = json!({"jsonrpc": "2.0", "id": msg["id"], "result": result});
                self.send(reply).await;
            }
            self.seen.push(msg);
        }
    }

    /// Sends a request without waiting for its answer; its id.
    pub(crate) async fn start_call(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// Answers the agent's request `id`.
    pub(crate) async fn reply(&mut self, id: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await;
    }

    /// The `session/update`s seen of this kind.
    pub(crate) fn updates(&self, kind: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|m| m["method"] == "session/update")
            .map(|m| m["params"]["update"].clone())
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    }
}

/// Answers nothing the agent asks (a test that expects no request).
pub(crate) fn no_requests(msg: &Value) -> Value {
    panic!("unexpected request from the agent: {msg}")
}

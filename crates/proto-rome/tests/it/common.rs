//! The Rome runner over a real engine (in-memory store) whose default model
//! is the scripted mock LLM over real HTTP, served on an ephemeral port.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use gantry_core::{AgentSpec, Engine, EngineBuilder, Providers, ProvidersConfig};
use gantry_store::MemoryStore;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::{AgentId, ProviderConfig, ProviderKind};
use proto_rome::{AgentProfile, Profiles, Rome};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Fails a wait that would otherwise hang the test.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(30);

pub(crate) struct Setup {
    pub engine: Engine,
    pub base: String,
    pub http: reqwest::Client,
    stop: CancellationToken,
    // Kept alive: dropping them stops the model server and removes the workspace.
    _llm: MockLlm,
    _dir: tempfile::TempDir,
}

impl Setup {
    /// POSTs `body` as JSON to `path`, with `token` if given.
    pub(crate) async fn post(
        &self,
        path: &str,
        body: &Value,
        token: Option<&str>,
    ) -> reqwest::Response {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().await.expect("request")
    }

    /// POSTs `body` as JSON to `path` with a `traceparent` header.
    pub(crate) async fn post_traced(
        &self,
        path: &str,
        body: &Value,
        traceparent: &str,
    ) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .header("traceparent", traceparent)
            .body(body.to_string())
            .send()
            .await
            .expect("request")
    }

    /// GETs `path` with `token`: the status and the JSON body.
    pub(crate) async fn get(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        let mut request = self.http.get(format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The runner over an engine whose model answers `steps`, with agent
/// `main` and the agents of `profiles`; `token` protects the routes.
pub(crate) async fn start(steps: Vec<Step>, profiles: Profiles, token: Option<&str>) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = std::fs::canonicalize(dir.path()).expect("workspace path");
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
    let engine = EngineBuilder::new(store, providers.clone())
        .providers(providers)
        .start()
        .await
        .expect("engine");
    for name in std::iter::once("main").chain(profiles.keys().map(String::as_str)) {
        let spec = AgentSpec {
            id: Some(AgentId::from(name)),
            name: Some(name.to_owned()),
            ..AgentSpec::default()
        };
        engine.agents().save(spec).await.expect("agent");
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    // reqwest builds a rustls config even for plain HTTP.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let stop = CancellationToken::new();
    let rome = Rome::new(engine.clone(), ws, profiles);
    tokio::spawn(proto_rome::serve_http(
        rome,
        listener,
        token.map(str::to_owned),
        Vec::new(),
        stop.clone(),
    ));
    Setup {
        engine,
        base,
        http,
        stop,
        _llm: llm,
        _dir: dir,
    }
}

/// A profile allowing only `tools`.
pub(crate) fn allowing(tools: &[&str]) -> AgentProfile {
    AgentProfile {
        allowed_tools: Some(tools.iter().map(|t| (*t).to_owned()).collect()),
        output_schema: None,
    }
}

/// The lines of an NDJSON answer, as they come.
pub(crate) struct Lines {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    pending: Vec<u8>,
}

impl Lines {
    pub(crate) fn new(response: reqwest::Response) -> Self {
        Self {
            body: response.bytes_stream().boxed(),
            pending: Vec::new(),
        }
    }

    /// The next message; `None` at the end of the stream.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(at) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=at).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some(serde_json::from_slice(&line).expect("a JSON line"));
            }
            let chunk = tokio::time::timeout(HANG_GUARD, self.body.next())
                .await
                .expect("the stream stalled")?;
            self.pending.extend_from_slice(&chunk.expect("body"));
        }
    }

    /// Every remaining message.
    pub(crate) async fn rest(mut self) -> Vec<Value> {
        let mut all = Vec::new();
        while let Some(m) = self.next().await {
            all.push(m);
        }
        all
    }
}

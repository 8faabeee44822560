//! A real server over a real engine (in-memory store), its model the
//! scripted mock LLM; a client that speaks the API, SSE included.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use gantry_core::{EngineBuilder, Providers, ProvidersConfig};
use gantry_store::MemoryStore;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::{ProviderConfig, ProviderKind};
use proto_http::{HttpOptions, Tokens};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Fails a wait that would otherwise hang the test.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(30);

pub(crate) struct Server {
    pub addr: SocketAddr,
    pub tokens: Tokens,
    pub http: reqwest::Client,
    pub token: Option<String>,
    _dir: tempfile::TempDir,
    pub workspace: std::path::PathBuf,
    stop: CancellationToken,
    /// The model server (dropping it stops the server).
    pub llm: MockLlm,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The API over an engine whose model answers `steps`, in order.
pub(crate) async fn start(steps: Vec<Step>) -> Server {
    start_with(steps, false).await
}

/// [`start`], with the engine keeping a data dir (in the temp dir) when
/// `data_dir`: what checkpoints need.
pub(crate) async fn start_with(steps: Vec<Step>, data_dir: bool) -> Server {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("workspace");
    let workspace = std::fs::canonicalize(ws).expect("workspace path");
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
    let config = gantry_core::EngineConfig {
        data_dir: data_dir.then(|| dir.path().join("data")),
        ..gantry_core::EngineConfig::default()
    };
    let engine = EngineBuilder::new(store, providers.clone())
        .providers(providers)
        .config(config)
        .start()
        .await
        .expect("engine");
    let tokens = Tokens::in_dir(dir.path());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let stop = CancellationToken::new();
    let options = HttpOptions {
        workspace: workspace.clone(),
        tokens: tokens.clone(),
        allowed_hosts: Vec::new(),
    };
    tokio::spawn(proto_http::serve(
        engine.clone(),
        listener,
        options,
        stop.clone(),
    ));
    Server {
        addr,
        tokens,
        http: reqwest::Client::new(),
        token: None,
        _dir: dir,
        workspace,
        stop,
        llm,
    }
}

impl Server {
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn auth(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    /// `GET path`: status and JSON body.
    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        let resp = self
            .auth(self.http.get(self.url(path)))
            .send()
            .await
            .expect("get");
        read(resp).await
    }

    /// `method path` with a JSON body.
    pub(crate) async fn send(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self.auth(self.http.request(method, self.url(path)));
        if let Some(body) = body {
            req = req.json(&body);
        }
        read(req.send().await.expect("send")).await
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send("POST", path, Some(body)).await
    }

    /// A new thread in the workspace, with `policy`; its id.
    pub(crate) async fn thread(&self, policy: Value) -> String {
        let (status, body) = self.post("/v1/threads", json!({ "policy": policy })).await;
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().expect("id").to_owned()
    }

    /// Follows `path` (SSE), resuming after `last_id` if given.
    pub(crate) async fn events(&self, path: &str, last_id: Option<&str>) -> Events {
        let mut req = self.auth(self.http.get(self.url(path)));
        if let Some(id) = last_id {
            req = req.header("last-event-id", id);
        }
        let resp = req.send().await.expect("events");
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()["content-type"].to_str().unwrap_or_default(),
            "text/event-stream"
        );
        let stream = eventsource_stream::EventStream::new(resp.bytes_stream());
        Events {
            stream: Box::pin(stream),
        }
    }
}

/// Status and JSON body (`null` when empty).
pub(crate) async fn read(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, body)
}

/// Asserts the API's error shape, `code` and status.
pub(crate) fn assert_error(got: &(u16, Value), status: u16, code: &str) {
    assert_eq!(got.0, status, "{}", got.1);
    assert_eq!(got.1["error"]["code"], code, "{}", got.1);
    assert!(
        got.1["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    assert!(got.1["error"]["details"].is_object());
}

/// One SSE event.
#[derive(Debug, Clone)]
pub(crate) struct Sse {
    pub id: String,
    pub event: String,
    pub data: Value,
}

type EventStream = std::pin::Pin<
    Box<
        dyn futures_util::Stream<
                Item = Result<
                    eventsource_stream::Event,
                    eventsource_stream::EventStreamError<reqwest::Error>,
                >,
            > + Send,
    >,
>;

pub(crate) struct Events {
    stream: EventStream,
}

impl Events {
    /// The next event; `None` when the stream ended.
    pub(crate) async fn next(&mut self) -> Option<Sse> {
        let next = tokio::time::timeout(HANG_GUARD, self.stream.next())
            .await
            .expect("an event in time")?;
        let e = next.ok()?;
        Some(Sse {
            id: e.id,
            event: e.event,
            data: serde_json::from_str(&e.data).unwrap_or(Value::Null),
        })
    }

    /// Events up to and including the first that `stop` accepts.
    pub(crate) async fn until(&mut self, stop: impl Fn(&Sse) -> bool) -> Vec<Sse> {
        let mut seen = Vec::new();
        while let Some(e) = self.next().await {
            let done = stop(&e);
            seen.push(e);
            if done {
                return seen;
            }
        }
        panic!("the stream ended before the awaited event: {seen:?}");
    }
}

/// The text of the `delta` events of `events`, in order.
pub(crate) fn delta_text(events: &[Sse]) -> String {
    events
        .iter()
        .filter(|e| e.event == "delta" && e.data["delta"] == "agent_text")
        .map(|e| e.data["text"].as_str().unwrap_or_default())
        .collect()
}

/// A model step that runs `command` in the shell.
pub(crate) fn shell(command: &str) -> Step {
    Step::tool_call("shell", json!({ "command": command }))
}

//! Shared by the control-plane tests: a real control plane on ephemeral
//! loopback ports over a real SQLite file, a fake runner speaking the
//! generated tonic client, and a small JSON/SSE HTTP client.

#![allow(dead_code)]

pub(crate) mod backends;
pub(crate) mod runner_v0_7;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use gantry_control_plane::store::ControlPlaneStore;
use gantry_control_plane::{ControlPlane, ControlPlaneOptions, serve};
use gantry_runner_protocol::v0_2 as pb;
use gantry_runner_protocol::v0_2::agent_runner_control_service_client::AgentRunnerControlServiceClient;
use gantry_runner_protocol::v0_2::client_message::Payload;
use gantry_runner_protocol::v0_2::server_message::Request as RunnerRequest;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Request, Status, Streaming};

pub(crate) use backends::{Backend, StoreAt, on_both_backends};

/// Bound on any single wait, so a broken control plane fails the test
/// instead of hanging it. Never reached when things work.
pub(crate) const GUARD: Duration = Duration::from_secs(20);

/// Awaits `future`, failing the test if it takes longer than [`GUARD`].
pub(crate) async fn guarded<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(GUARD, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// A control plane serving on 127.0.0.1:0 (gRPC and HTTP).
pub(crate) struct Harness {
    pub cp: ControlPlane,
    pub grpc: SocketAddr,
    pub http: SocketAddr,
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Harness {
    /// Serves the control plane of `data_dir` with runners given `timeout`
    /// to answer.
    pub(crate) async fn start(data_dir: &Path, timeout: Duration) -> Self {
        let options = ControlPlaneOptions {
            request_timeout: timeout,
            ..ControlPlaneOptions::default()
        };
        Self::start_with(data_dir, options).await
    }

    /// Serves the control plane of `data_dir` with `options`.
    pub(crate) async fn start_with(data_dir: &Path, options: ControlPlaneOptions) -> Self {
        Self::start_on(data_dir, options, "127.0.0.1:0").await
    }

    /// Serves the control plane of `data_dir` with `options`, the HTTP API
    /// bound to `http_bind` (called through 127.0.0.1 all the same).
    pub(crate) async fn start_on(
        data_dir: &Path,
        options: ControlPlaneOptions,
        http_bind: &str,
    ) -> Self {
        let cp = ControlPlane::open_in(data_dir, options).await.unwrap();
        Self::serve(cp, http_bind).await
    }

    /// Serves the control plane of the store at `at` with runners given
    /// `timeout` to answer.
    pub(crate) async fn start_at(at: &StoreAt, timeout: Duration) -> Self {
        let options = ControlPlaneOptions {
            request_timeout: timeout,
            ..ControlPlaneOptions::default()
        };
        Self::start_over(at.open().await, options).await
    }

    /// Serves a control plane over `store` with `options`.
    pub(crate) async fn start_over(
        store: std::sync::Arc<dyn ControlPlaneStore>,
        options: ControlPlaneOptions,
    ) -> Self {
        let cp = ControlPlane::open(store, options).await.unwrap();
        Self::serve(cp, "127.0.0.1:0").await
    }

    /// Serves `cp` on 127.0.0.1:0 (gRPC) and `http_bind` (HTTP).
    async fn serve(cp: ControlPlane, http_bind: &str) -> Self {
        let grpc_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let http_listener = TcpListener::bind(http_bind).await.unwrap();
        let grpc = grpc_listener.local_addr().unwrap();
        let port = http_listener.local_addr().unwrap().port();
        let http = SocketAddr::from(([127, 0, 0, 1], port));
        let (stop, stopped) = oneshot::channel::<()>();
        let served = cp.clone();
        let task = tokio::spawn(async move {
            serve(served, grpc_listener, http_listener, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            cp,
            grpc,
            http,
            client: reqwest::Client::builder().build().unwrap(),
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Asks the servers to stop (as SIGTERM does), without waiting.
    pub(crate) fn begin_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Stops the servers and waits for them to finish.
    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            guarded("the servers to stop", task).await.unwrap();
        }
    }

    /// Adds a runner; its token.
    pub(crate) async fn add_runner(&self, name: &str) -> (String, String) {
        let (runner, token) = self.cp.add_runner(name).await.unwrap();
        (runner.id, token)
    }

    /// Waits until the API lists runner `id` as not connected. The control
    /// plane learns of a drop from the transport, with no event a client
    /// can wait on: polls the list, bounded by [`GUARD`].
    pub(crate) async fn wait_disconnected(&self, id: &str) {
        let deadline = std::time::Instant::now() + GUARD;
        loop {
            let (_, runners) = self.get("/v1/runners").await;
            let connected = runners
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["id"] == id && r["connected"] == true);
            if !connected {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "runner {id} is still listed as connected"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The URL of `path` on the HTTP API.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.http)
    }

    /// `GET path`: status and JSON body.
    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        self.send(self.client.get(self.url(path))).await
    }

    /// `POST path` with a JSON body: status and JSON body.
    pub(crate) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let request = self
            .client
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body.to_string());
        self.send(request).await
    }

    /// `DELETE path`: status and JSON body.
    pub(crate) async fn delete(&self, path: &str) -> (u16, Value) {
        self.send(self.client.delete(self.url(path))).await
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
        let response = guarded("an HTTP answer", request.send()).await.unwrap();
        let status = response.status().as_u16();
        let bytes = response.bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!("non-JSON body {:?}: {e}", String::from_utf8_lossy(&bytes))
            })
        };
        (status, body)
    }

    /// Starts `POST path` in the background (it waits for a runner's answer).
    pub(crate) fn post_later(&self, path: &str, body: Value) -> JoinHandle<(u16, Value)> {
        let client = self.client.clone();
        let url = self.url(path);
        tokio::spawn(async move {
            let response = client
                .post(url)
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let body = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
            (status, body)
        })
    }

    /// Starts `DELETE path` in the background.
    pub(crate) fn delete_later(&self, path: &str) -> JoinHandle<(u16, Value)> {
        let client = self.client.clone();
        let url = self.url(path);
        tokio::spawn(async move {
            let response = client.delete(url).send().await.unwrap();
            let status = response.status().as_u16();
            let body = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
            (status, body)
        })
    }

    /// Follows a thread's SSE stream, resuming after `last_event_id`.
    pub(crate) async fn follow(
        &self,
        thread_id: &str,
        last_event_id: Option<u64>,
    ) -> impl Stream<Item = eventsource_stream::Event> + Unpin + use<> {
        let mut request = self
            .client
            .get(self.url(&format!("/v1/threads/{thread_id}/events")));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id.to_string());
        }
        Self::stream(request).await
    }

    /// Follows every thread's SSE stream (`GET /v1/events`), resuming after
    /// `last_event_id` (from now on without it). The stream's headers come
    /// at once, before any update.
    pub(crate) async fn follow_all(
        &self,
        last_event_id: Option<&str>,
    ) -> impl Stream<Item = eventsource_stream::Event> + Unpin + use<> {
        let mut request = self.client.get(self.url("/v1/events"));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        Self::stream(request).await
    }

    /// An SSE stream's events, once its headers said it is one.
    async fn stream(
        request: reqwest::RequestBuilder,
    ) -> impl Stream<Item = eventsource_stream::Event> + Unpin + use<> {
        let response = guarded("the SSE stream", request.send()).await.unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Box::pin(
            response
                .bytes_stream()
                .eventsource()
                .map(|event| event.unwrap()),
        )
    }
}

/// Awaits a background HTTP call.
pub(crate) async fn answer(call: JoinHandle<(u16, Value)>) -> (u16, Value) {
    guarded("an HTTP answer", call).await.unwrap()
}

/// The next `n` SSE events.
pub(crate) async fn take_events(
    events: &mut (impl Stream<Item = eventsource_stream::Event> + Unpin),
    n: usize,
) -> Vec<eventsource_stream::Event> {
    let mut taken = Vec::new();
    while taken.len() < n {
        let event = guarded("an SSE event", events.next()).await;
        taken.push(event.expect("the SSE stream ended early"));
    }
    taken
}

/// Adds `authorization: Bearer <token>` to every call.
#[derive(Clone)]
pub(crate) struct Bearer(pub String);

impl Interceptor for Bearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let value = format!("Bearer {}", self.0).parse().unwrap();
        request.metadata_mut().insert("authorization", value);
        Ok(request)
    }
}

/// The generated client, authenticating with `token`.
pub(crate) async fn client(
    grpc: SocketAddr,
    token: &str,
) -> AgentRunnerControlServiceClient<InterceptedService<Channel, Bearer>> {
    let channel = guarded(
        "a gRPC connection",
        Channel::from_shared(format!("http://{grpc}"))
            .unwrap()
            .connect(),
    )
    .await
    .unwrap();
    AgentRunnerControlServiceClient::with_interceptor(channel, Bearer(token.to_owned()))
}

/// A registration offering `sdk` with `models`.
pub(crate) fn offering(sdk: &str, models: &[&str]) -> pb::RegisterRunnerRequest {
    pb::RegisterRunnerRequest {
        agent_sdks: vec![pb::AgentSdk {
            name: sdk.into(),
            models: models
                .iter()
                .map(|m| pb::LlmModel {
                    name: (*m).into(),
                    reasoning: vec!["low".into(), "high".into()],
                })
                .collect(),
        }],
    }
}

/// A runner played by the test: registered, channel open.
pub(crate) struct FakeRunner {
    outbound: mpsc::Sender<pb::ClientMessage>,
    inbound: Streaming<pb::ServerMessage>,
}

impl FakeRunner {
    /// Registers with `registration` and opens the channel.
    pub(crate) async fn connect(
        grpc: SocketAddr,
        token: &str,
        registration: pb::RegisterRunnerRequest,
    ) -> Self {
        Self::try_connect(grpc, token, registration).await.unwrap()
    }

    /// [`FakeRunner::connect`], or the status that refused it.
    pub(crate) async fn try_connect(
        grpc: SocketAddr,
        token: &str,
        registration: pb::RegisterRunnerRequest,
    ) -> Result<Self, Status> {
        let mut client = client(grpc, token).await;
        guarded("RegisterRunner", client.register_runner(registration)).await?;
        let (outbound, rx) = mpsc::channel(64);
        let inbound = guarded(
            "ControlChannel",
            client.control_channel(ReceiverStream::new(rx)),
        )
        .await?
        .into_inner();
        Ok(Self { outbound, inbound })
    }

    /// Answers every request as a runner that does what it is asked,
    /// until the channel closes.
    pub(crate) fn answer_everything(mut self) -> JoinHandle<()> {
        tokio::spawn(async move {
            while let Ok(Some(message)) = self.inbound.message().await {
                let (Some(id), Some(request)) = (message.request_id, message.request) else {
                    continue;
                };
                let reply = match request {
                    RunnerRequest::CreateAgentRequest(r) => {
                        agent_update(&r.agent_id, pb::AgentStatus::Ready)
                    }
                    RunnerRequest::DeleteAgentRequest(r) => {
                        agent_update(&r.agent_id, pb::AgentStatus::Deleted)
                    }
                    RunnerRequest::CreateThreadRequest(_) => {
                        thread_update(&format!("thread-of-{id}"), pb::ThreadStatus::Ready)
                    }
                    RunnerRequest::DeleteThreadRequest(r) => {
                        thread_update(&r.thread_id, pb::ThreadStatus::Deleted)
                    }
                    RunnerRequest::CreateUserMessageRequest(_) => {
                        turn_update(&format!("turn-of-{id}"), pb::TurnStatus::Completed)
                    }
                    RunnerRequest::InstallSkillsMpRequest(r) => {
                        Payload::SkillMpUpdate(pb::SkillMpUpdate {
                            agent_id: r.agent_id,
                            package_name: r.package_name,
                            status: pb::SkillMpStatus::Installed.into(),
                        })
                    }
                };
                self.send(Some(&id), reply).await;
            }
        })
    }

    /// The next request the control plane sends; it always carries an id.
    pub(crate) async fn next_request(&mut self) -> (String, RunnerRequest) {
        let message = guarded("a request to the runner", self.inbound.message())
            .await
            .unwrap()
            .expect("the control plane closed the channel");
        let id = message.request_id.expect("request without request_id");
        (id, message.request.expect("message without a request"))
    }

    /// Sends one message, echoing `request_id` when given.
    pub(crate) async fn send(&self, request_id: Option<&str>, payload: Payload) {
        let message = pb::ClientMessage {
            request_id: request_id.map(str::to_owned),
            payload: Some(payload),
        };
        self.outbound.send(message).await.unwrap();
    }

    /// Whether the control plane ended the channel.
    pub(crate) async fn closed(&mut self) -> bool {
        matches!(
            guarded("the channel to end", self.inbound.message()).await,
            Ok(None) | Err(_)
        )
    }
}

/// `AgentUpdate`.
pub(crate) fn agent_update(agent_id: &str, status: pb::AgentStatus) -> Payload {
    Payload::AgentUpdate(pb::AgentUpdate {
        agent_id: agent_id.into(),
        status: status.into(),
    })
}

/// `ThreadUpdate`.
pub(crate) fn thread_update(thread_id: &str, status: pb::ThreadStatus) -> Payload {
    Payload::ThreadUpdate(pb::ThreadUpdate {
        thread_id: thread_id.into(),
        status: status.into(),
    })
}

/// `TurnUpdate`.
pub(crate) fn turn_update(turn_id: &str, status: pb::TurnStatus) -> Payload {
    Payload::TurnUpdate(pb::TurnUpdate {
        sdk_turn_id: turn_id.into(),
        status: status.into(),
    })
}

/// `ItemUpdate` with text.
pub(crate) fn item_update(
    item_id: &str,
    kind: pb::ItemType,
    status: pb::ItemStatus,
    text: &str,
) -> Payload {
    Payload::ItemUpdate(pb::ItemUpdate {
        sdk_item_id: item_id.into(),
        status: status.into(),
        item_type: kind.into(),
        text: Some(text.into()),
        command_execution_item: None,
    })
}

/// `RequestError`.
pub(crate) fn request_error(message: &str) -> Payload {
    Payload::RequestError(pb::RequestError {
        error_message: message.into(),
    })
}

/// Connects a runner offering `gantry` with model `m1`, and creates an
/// agent and a thread on it; returns (runner, agent id, thread id).
pub(crate) async fn runner_with_thread(h: &Harness, name: &str) -> (FakeRunner, String, String) {
    let (_, token) = h.add_runner(name).await;
    let mut runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;
    let call = h.post_later("/v1/agents", serde_json::json!({"model": "m1"}));
    let (id, request) = runner.next_request().await;
    let RunnerRequest::CreateAgentRequest(create) = request else {
        panic!("expected CreateAgentRequest, got {request:?}");
    };
    runner
        .send(
            Some(&id),
            agent_update(&create.agent_id, pb::AgentStatus::Ready),
        )
        .await;
    let (status, agent) = answer(call).await;
    assert_eq!(status, 201, "{agent}");
    let agent_id = agent["id"].as_str().unwrap().to_owned();

    let call = h.post_later(
        &format!("/v1/agents/{agent_id}/threads"),
        serde_json::json!({}),
    );
    let (id, request) = runner.next_request().await;
    assert!(
        matches!(request, RunnerRequest::CreateThreadRequest(_)),
        "{request:?}"
    );
    let thread_id = format!("thread-of-{id}");
    runner
        .send(
            Some(&id),
            thread_update(&thread_id, pb::ThreadStatus::Ready),
        )
        .await;
    let (status, thread) = answer(call).await;
    assert_eq!(status, 201, "{thread}");
    assert_eq!(thread["id"], thread_id.as_str());
    (runner, agent_id, thread_id)
}

//! A runner of 0.7.0 played by the test, over the generated 0.7.0 client:
//! registered with an SDK that says it is ready (so the control plane
//! detects 0.7), heartbeats answered by a task of its own while
//! [`FakeRunner7::answer_heartbeats`] says so, every other request handed
//! to the test in order.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use gantry_runner_protocol::v0_7 as pb7;
use gantry_runner_protocol::v0_7::agent_runner_control_service_client::AgentRunnerControlServiceClient;
use gantry_runner_protocol::v0_7::client_message::Payload;
use gantry_runner_protocol::v0_7::server_message::Request;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

use serde_json::json;

use super::{Bearer, Harness, answer, guarded};

/// The turn [`start_turn`] starts.
pub(crate) const TURN: &str = "turn-1";

/// A 0.7.0 runner whose channel is open.
pub(crate) struct FakeRunner7 {
    outbound: mpsc::Sender<pb7::ClientMessage>,
    requests: mpsc::Receiver<(String, Request)>,
    answering: Arc<AtomicBool>,
}

impl FakeRunner7 {
    /// Registers `sdk` (ready) with `models` and opens the channel.
    pub(crate) async fn connect(grpc: SocketAddr, token: &str, sdk: &str, models: &[&str]) -> Self {
        let channel = Channel::from_shared(format!("http://{grpc}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut client =
            AgentRunnerControlServiceClient::with_interceptor(channel, Bearer(token.to_owned()));
        let registration = pb7::RegisterRunnerRequest {
            agent_sdks: vec![pb7::AgentSdk {
                name: sdk.into(),
                models: models
                    .iter()
                    .map(|m| pb7::LlmModel {
                        name: (*m).into(),
                        reasoning: vec!["low".into(), "high".into()],
                    })
                    .collect(),
                status: pb7::AgentSdkStatus::Ready.into(),
                error_message: None,
            }],
        };
        guarded("RegisterRunner", client.register_runner(registration))
            .await
            .unwrap();
        let (outbound, rx) = mpsc::channel(64);
        let mut inbound = guarded(
            "ControlChannel",
            client.control_channel(ReceiverStream::new(rx)),
        )
        .await
        .unwrap()
        .into_inner();
        let answering = Arc::new(AtomicBool::new(true));
        let (to_test, requests) = mpsc::channel(64);
        let (beats, answer) = (outbound.clone(), answering.clone());
        tokio::spawn(async move {
            while let Ok(Some(message)) = inbound.message().await {
                let Some(request) = message.request else {
                    continue;
                };
                if matches!(request, Request::HeartbeatRequest(_)) {
                    if answer.load(Ordering::SeqCst) {
                        let reply = pb7::ClientMessage {
                            request_id: Some(message.request_id),
                            payload: Some(Payload::HeartbeatResponse(pb7::HeartbeatResponse {})),
                        };
                        let _ = beats.send(reply).await;
                    }
                    continue;
                }
                if to_test.send((message.request_id, request)).await.is_err() {
                    return;
                }
            }
        });
        Self {
            outbound,
            requests,
            answering,
        }
    }

    /// Whether heartbeats are answered from now on.
    pub(crate) fn answer_heartbeats(&self, answer: bool) {
        self.answering.store(answer, Ordering::SeqCst);
    }

    /// The next request other than a heartbeat, with its id.
    pub(crate) async fn next_request(&mut self) -> (String, Request) {
        guarded("a request to the runner", self.requests.recv())
            .await
            .expect("the control plane closed the channel")
    }

    /// Sends one message, echoing `request_id` when given.
    pub(crate) async fn send(&self, request_id: Option<&str>, payload: Payload) {
        let message = pb7::ClientMessage {
            request_id: request_id.map(str::to_owned),
            payload: Some(payload),
        };
        self.outbound.send(message).await.unwrap();
    }
}

/// `TurnUpdate` of `thread`.
pub(crate) fn turn7(thread: &str, turn: &str, status: pb7::TurnStatus) -> Payload {
    Payload::TurnUpdate(pb7::TurnUpdate {
        sdk_turn_id: turn.into(),
        status: status.into(),
        thread_id: thread.into(),
    })
}

/// `ItemUpdate` of `turn` of `thread`, with text.
pub(crate) fn item7(
    (thread, turn, item): (&str, &str, &str),
    kind: pb7::ItemType,
    status: pb7::ItemStatus,
    text: &str,
) -> Payload {
    Payload::ItemUpdate(pb7::ItemUpdate {
        sdk_item_id: item.into(),
        status: status.into(),
        item_type: kind.into(),
        text: Some(text.into()),
        command_execution_item: None,
        thread_id: thread.into(),
        sdk_turn_id: turn.into(),
    })
}

/// A 0.7.0 runner with a thread (the control plane picked its id).
pub(crate) async fn thread_on_a_0_7_runner(h: &Harness) -> (FakeRunner7, String) {
    let (_, token) = h.add_runner("ch-1").await;
    let mut runner = FakeRunner7::connect(h.grpc, &token, "codex", &["gpt-5"]).await;
    let (status, agent) = h
        .post("/v1/agents", json!({"sdk": "codex", "model": "gpt-5"}))
        .await;
    assert_eq!(status, 201, "{agent}");
    let agent_id = agent["id"].as_str().unwrap();
    let call = h.post_later(&format!("/v1/agents/{agent_id}/threads"), json!({}));
    let (id, request) = runner.next_request().await;
    let Request::CreateThreadRequest(create) = request else {
        panic!("expected CreateThreadRequest, got {request:?}");
    };
    let ready = Payload::ThreadUpdate(pb7::ThreadUpdate {
        thread_id: create.thread_id.clone(),
        status: pb7::ThreadStatus::Ready.into(),
    });
    runner.send(Some(&id), ready).await;
    let (status, thread) = answer(call).await;
    assert_eq!(status, 201, "{thread}");
    (runner, create.thread_id)
}

/// Sends a message; the runner starts its turn as CompanyHelm's does
/// (running, the user's message, the agent's message begun and left
/// open). Returns the message's request id.
pub(crate) async fn start_turn(h: &Harness, runner: &mut FakeRunner7, thread: &str) -> String {
    let call = h.post_later(
        &format!("/v1/threads/{thread}/messages"),
        json!({"text": "go"}),
    );
    let (id, request) = runner.next_request().await;
    assert!(
        matches!(request, Request::CreateUserMessageRequest(_)),
        "{request:?}"
    );
    runner
        .send(Some(&id), turn7(thread, TURN, pb7::TurnStatus::Running))
        .await;
    let (status, accepted) = answer(call).await;
    assert_eq!(status, 202, "{accepted}");
    use pb7::ItemStatus::{Completed, Running};
    use pb7::ItemType::{AgentMessage, UserMessage};
    for (item, kind, status, text) in [
        ("u", UserMessage, Running, "go"),
        ("u", UserMessage, Completed, "go"),
        ("a", AgentMessage, Running, "Working on"),
    ] {
        runner
            .send(Some(&id), item7((thread, TURN, item), kind, status, text))
            .await;
    }
    id
}

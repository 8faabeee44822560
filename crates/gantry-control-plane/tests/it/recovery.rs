//! What survives: a request pending while its runner reconnects is sent
//! again with the same id; a control-plane restart keeps runners, agents,
//! threads and their history. One runner, one channel: a second connection
//! with a live runner's token is refused, a reconnect is not.

use crate::support;
use crate::support::on_both_backends;

use std::time::Duration;

use gantry_control_plane::ControlPlaneOptions;
use gantry_runner_protocol::v0_2::server_message::Request as RunnerRequest;
use gantry_runner_protocol::v0_2::{self as pb, ItemStatus, ItemType, TurnStatus};
use serde_json::json;
use support::{
    FakeRunner, Harness, StoreAt, agent_update, answer, client, item_update, offering, take_events,
    thread_update, turn_update,
};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

const TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_pending_request_is_resent_with_the_same_id_after_the_runner_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (_, token) = h.add_runner("r1").await;
    let mut runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;

    let call = h.post_later("/v1/agents", json!({"agent_id": "a1"}));
    let (first_id, _) = runner.next_request().await;
    // The runner drops its channel without answering, then comes back.
    drop(runner);
    let mut runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;

    let (again_id, request) = runner.next_request().await;
    assert_eq!(again_id, first_id);
    assert!(matches!(request, RunnerRequest::CreateAgentRequest(ref c) if c.agent_id == "a1"));
    runner
        .send(Some(&again_id), agent_update("a1", pb::AgentStatus::Ready))
        .await;
    let (status, agent) = answer(call).await;
    assert_eq!(status, 201, "{agent}");
    h.stop().await;
}

on_both_backends!(a_restart_keeps_runners_agents_threads_and_history);

async fn a_restart_keeps_runners_agents_threads_and_history(at: StoreAt) {
    let h = Harness::start_at(&at, TIMEOUT).await;
    let (_, token) = h.add_runner("r1").await;
    let (mut runner, agent_id, thread_id) = {
        let mut runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;
        let call = h.post_later("/v1/agents", json!({"agent_id": "a1", "model": "m1"}));
        let (id, _) = runner.next_request().await;
        runner
            .send(Some(&id), agent_update("a1", pb::AgentStatus::Ready))
            .await;
        assert_eq!(answer(call).await.0, 201);
        let call = h.post_later("/v1/agents/a1/threads", json!({}));
        let (id, _) = runner.next_request().await;
        runner
            .send(Some(&id), thread_update("t1", pb::ThreadStatus::Ready))
            .await;
        assert_eq!(answer(call).await.0, 201);
        (runner, "a1".to_owned(), "t1".to_owned())
    };
    let call = h.post_later("/v1/threads/t1/messages", json!({"text": "hello"}));
    let (message_id, _) = runner.next_request().await;
    let id = Some(message_id.as_str());
    runner
        .send(id, turn_update("turn-1", TurnStatus::Running))
        .await;
    assert_eq!(answer(call).await.0, 202);
    runner
        .send(
            id,
            item_update("u1", ItemType::UserMessage, ItemStatus::Completed, "hello"),
        )
        .await;
    let mut events = h.follow(&thread_id, None).await;
    take_events(&mut events, 3).await;
    drop(events);
    h.stop().await;
    drop(runner);

    let h = Harness::start_at(&at, TIMEOUT).await;
    let (_, agents) = h.get("/v1/agents").await;
    assert_eq!(agents[0]["id"], agent_id.as_str());
    let (_, runners) = h.get("/v1/runners").await;
    assert_eq!(runners[0]["connected"], false);
    assert_eq!(runners[0]["sdks"][0]["models"][0]["name"], "m1");

    // The runner comes back with the same token and finishes the turn it
    // was running, echoing the request sent before the restart.
    let runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;
    runner
        .send(
            id,
            item_update(
                "a1-reply",
                ItemType::AgentMessage,
                ItemStatus::Completed,
                "hi",
            ),
        )
        .await;
    runner
        .send(id, turn_update("turn-1", TurnStatus::Completed))
        .await;

    let mut events = h.follow(&thread_id, None).await;
    let got = take_events(&mut events, 5).await;
    let ids: Vec<&str> = got.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5"]);
    let kinds: Vec<&str> = got.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(kinds, ["thread", "turn", "item", "item", "turn"]);

    let (_, thread) = h.get(&format!("/v1/threads/{thread_id}")).await;
    let turn = &thread["turns"][0];
    assert_eq!(turn["status"], "completed");
    let texts: Vec<&str> = turn["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["hello", "hi"]);
    let (_, runners) = h.get("/v1/runners").await;
    assert_eq!(runners[0]["connected"], true);
    assert_eq!(runners[0]["running_turns"], 0);
    h.stop().await;
}

#[tokio::test]
async fn a_second_connection_of_a_live_runner_is_refused_and_the_first_keeps_its_channel() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (_, token) = h.add_runner("r1").await;
    let mut first = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;

    // Another process with the same token: refused at registration (its
    // offers must not replace the live runner's) ...
    let Err(status) = FakeRunner::try_connect(h.grpc, &token, offering("other", &["m9"])).await
    else {
        panic!("a second runner with the same token was let in");
    };
    assert_eq!(status.code(), Code::AlreadyExists);
    assert!(
        status
            .message()
            .starts_with("runner r1 is already connected from 127.0.0.1:"),
        "{}",
        status.message()
    );
    // ... and at the channel, for a client that skips registration.
    let mut second = client(h.grpc, &token).await;
    let (_tx, rx) = tokio::sync::mpsc::channel::<pb::ClientMessage>(1);
    let status = second
        .control_channel(ReceiverStream::new(rx))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::AlreadyExists);
    assert!(status.message().contains("token"), "{}", status.message());

    // The first runner was not displaced: it still gets the requests.
    let call = h.post_later("/v1/agents", json!({"agent_id": "a1"}));
    let (id, _) = first.next_request().await;
    first
        .send(Some(&id), agent_update("a1", pb::AgentStatus::Ready))
        .await;
    assert_eq!(answer(call).await.0, 201);
    let (_, runners) = h.get("/v1/runners").await;
    assert_eq!(runners[0]["connected"], true);
    assert_eq!(runners[0]["sdks"][0]["name"], "gantry", "offers kept");
    h.stop().await;
}

#[tokio::test]
async fn a_runner_reconnects_at_once_after_closing_its_channel() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (_, token) = h.add_runner("r1").await;
    for _ in 0..3 {
        // Dropped and dialed again straight away: the control plane may not
        // have seen the close yet, and waits for it instead of refusing.
        let runner = FakeRunner::try_connect(h.grpc, &token, offering("gantry", &["m1"])).await;
        assert!(runner.is_ok(), "{:?}", runner.err());
    }
    let mut runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;
    let call = h.post_later("/v1/agents", json!({"agent_id": "a1"}));
    let (id, _) = runner.next_request().await;
    runner
        .send(Some(&id), agent_update("a1", pb::AgentStatus::Ready))
        .await;
    assert_eq!(answer(call).await.0, 201);
    h.stop().await;
}

#[tokio::test]
async fn a_runner_whose_connection_died_unseen_is_let_back_in_once_pings_go_unanswered() {
    let dir = tempfile::tempdir().unwrap();
    let options = ControlPlaneOptions {
        request_timeout: TIMEOUT,
        keepalive: Duration::from_millis(200),
        ..ControlPlaneOptions::default()
    };
    let h = Harness::start_with(dir.path(), options).await;
    let (runner_id, token) = h.add_runner("r1").await;
    // The first connection goes through a proxy that then stops passing
    // anything while keeping both sockets open: a half-open connection, as
    // when the runner's machine vanishes.
    let proxy = Freezer::start(h.grpc).await;
    let stale = FakeRunner::connect(proxy.addr, &token, offering("gantry", &["m1"])).await;
    proxy.freeze();

    // The server's unanswered keepalive ping closes it; the runner, retrying
    // as it does on ALREADY_EXISTS, gets in. Each attempt waits (bounded)
    // for the old channel to end, so this loop does not spin.
    let deadline = std::time::Instant::now() + support::GUARD;
    let mut runner = loop {
        match FakeRunner::try_connect(h.grpc, &token, offering("gantry", &["m1"])).await {
            Ok(runner) => break runner,
            Err(status) => {
                assert_eq!(status.code(), Code::AlreadyExists, "{status}");
                assert!(std::time::Instant::now() < deadline, "still refused");
            }
        }
    };
    let call = h.post_later("/v1/agents", json!({"agent_id": "a1"}));
    let (id, _) = runner.next_request().await;
    runner
        .send(Some(&id), agent_update("a1", pb::AgentStatus::Ready))
        .await;
    assert_eq!(answer(call).await.0, 201);
    let (_, runners) = h.get("/v1/runners").await;
    assert_eq!(runners[0]["id"], runner_id.as_str());
    assert_eq!(runners[0]["connected"], true);
    drop(stale);
    h.stop().await;
}

/// A TCP proxy that can stop forwarding while holding its sockets open.
struct Freezer {
    addr: std::net::SocketAddr,
    frozen: tokio::sync::watch::Sender<bool>,
}

impl Freezer {
    async fn start(upstream: std::net::SocketAddr) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (frozen, watch) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pump(client_read, server_write, watch.clone()));
                tokio::spawn(pump(server_read, client_write, watch.clone()));
            }
        });
        Self { addr, frozen }
    }

    /// Stops forwarding for good; the sockets stay open.
    fn freeze(&self) {
        self.frozen.send_replace(true);
    }
}

/// Copies `from` to `to` until frozen, then holds both until the test ends.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut frozen: tokio::sync::watch::Receiver<bool>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            _ = frozen.wait_for(|f| *f) => break,
        };
        if *frozen.borrow() || to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    // Frozen: neither read nor write, nor close, until the sender is gone.
    let _ = frozen.wait_for(|f| !*f).await;
    drop((from, to));
}

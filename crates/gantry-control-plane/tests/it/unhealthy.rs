//! A runner that misses its heartbeats gets no new work, and every route
//! that would give it some says so: the 503 names the runner and the cause,
//! whether the caller named the runner or let the control plane choose.

use crate::support;

use std::time::{Duration, Instant};

use gantry_control_plane::ControlPlaneOptions;
use gantry_runner_protocol::v0_7 as pb7;
use gantry_runner_protocol::v0_7::client_message::Payload;
use gantry_runner_protocol::v0_7::server_message::Request;
use serde_json::{Value, json};
use support::runner_v0_7::FakeRunner7;
use support::{GUARD, Harness, answer};

/// Waits until `GET /v1/runners` says the one runner's health is `healthy`
/// (the control plane learns it from heartbeats unanswered: nothing to wait
/// on but the list, polled, bounded).
async fn wait_healthy(h: &Harness, healthy: bool) {
    let deadline = Instant::now() + GUARD;
    loop {
        let (_, runners) = h.get("/v1/runners").await;
        if runners[0]["healthy"] == healthy {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "never healthy={healthy}: {runners}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn says_unhealthy(status: u16, body: &Value, runner_id: &str) {
    assert_eq!(status, 503, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!(
            "runner {runner_id} is unhealthy: it missed its heartbeats"
        )),
        "{message}"
    );
}

#[tokio::test]
async fn every_route_names_an_unhealthy_runner_as_why_it_gets_no_work() {
    let dir = tempfile::tempdir().unwrap();
    let options = ControlPlaneOptions {
        request_timeout: Duration::from_secs(10),
        heartbeat: Duration::from_millis(50),
        ..ControlPlaneOptions::default()
    };
    let h = Harness::start_with(dir.path(), options).await;
    let (runner_id, token) = h.add_runner("ch-1").await;
    let mut runner = FakeRunner7::connect(h.grpc, &token, "codex", &["gpt-5"]).await;
    // While healthy: an agent and a thread.
    let (status, agent) = h
        .post("/v1/agents", json!({"sdk": "codex", "model": "gpt-5"}))
        .await;
    assert_eq!(status, 201, "{agent}");
    let agent_id = agent["id"].as_str().unwrap().to_owned();
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
    assert_eq!(answer(call).await.0, 201);
    let thread = create.thread_id;

    runner.answer_heartbeats(false);
    wait_healthy(&h, false).await;
    let wanted = json!({"sdk": "codex", "model": "gpt-5"});
    let (status, body) = h.post("/v1/agents", wanted.clone()).await;
    says_unhealthy(status, &body, &runner_id);
    let (status, body) = h
        .post(
            "/v1/agents",
            json!({"sdk": "codex", "model": "gpt-5", "runner_id": runner_id}),
        )
        .await;
    says_unhealthy(status, &body, &runner_id);
    let (status, body) = h
        .post(&format!("/v1/agents/{agent_id}/threads"), json!({}))
        .await;
    says_unhealthy(status, &body, &runner_id);
    for (path, body) in [
        ("messages", json!({"text": "hi", "model": "gpt-5"})),
        ("interrupt", json!({})),
    ] {
        let (status, answered) = h.post(&format!("/v1/threads/{thread}/{path}"), body).await;
        says_unhealthy(status, &answered, &runner_id);
    }

    // Answering again, it takes work again.
    runner.answer_heartbeats(true);
    wait_healthy(&h, true).await;
    let (status, agent) = h.post("/v1/agents", wanted).await;
    assert_eq!(status, 201, "{agent}");
    h.stop().await;
}

//! Agents and threads through the HTTP API: requests reach the runner with
//! a request id, its answers (or refusals, or silence) decide the response.

use crate::support;

use std::time::Duration;

use gantry_runner_protocol::v0_2 as pb;
use gantry_runner_protocol::v0_2::server_message::Request as RunnerRequest;
use serde_json::json;
use support::{
    FakeRunner, Harness, agent_update, answer, offering, request_error, runner_with_thread,
    thread_update,
};

const TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn creating_an_agent_asks_the_runner_and_answers_201_once_it_is_ready() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (runner_id, token) = h.add_runner("r1").await;
    let mut runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;

    let call = h.post_later("/v1/agents", json!({"agent_id": "coder", "model": "m1"}));
    let (request_id, request) = runner.next_request().await;
    let RunnerRequest::CreateAgentRequest(create) = request else {
        panic!("expected CreateAgentRequest, got {request:?}");
    };
    assert!(!request_id.is_empty());
    assert_eq!(create.agent_id, "coder");
    assert_eq!(create.agent_sdk, "gantry");
    runner
        .send(
            Some(&request_id),
            agent_update("coder", pb::AgentStatus::Ready),
        )
        .await;

    let (status, agent) = answer(call).await;
    assert_eq!(status, 201, "{agent}");
    assert_eq!(agent["id"], "coder");
    assert_eq!(agent["runner_id"], runner_id.as_str());
    assert_eq!(agent["status"], "ready");
    assert_eq!(agent["model"], "m1");
    let (_, agents) = h.get("/v1/agents").await;
    assert_eq!(agents.as_array().unwrap().len(), 1);
    h.stop().await;
}

#[tokio::test]
async fn without_a_runner_id_the_least_loaded_runner_offering_the_model_gets_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (_, busy_token) = h.add_runner("busy").await;
    let (other_id, other_token) = h.add_runner("other-model").await;
    let (idle_id, idle_token) = h.add_runner("idle").await;
    // "busy" gets an agent and a thread with a running turn.
    let (mut busy, _, thread_id) = {
        let mut busy = FakeRunner::connect(h.grpc, &busy_token, offering("gantry", &["m1"])).await;
        let call = h.post_later("/v1/agents", json!({}));
        let (id, request) = busy.next_request().await;
        let RunnerRequest::CreateAgentRequest(create) = request else {
            panic!("{request:?}");
        };
        busy.send(
            Some(&id),
            agent_update(&create.agent_id, pb::AgentStatus::Ready),
        )
        .await;
        let (_, agent) = answer(call).await;
        let call = h.post_later(
            &format!("/v1/agents/{}/threads", agent["id"].as_str().unwrap()),
            json!({"model": "m1"}),
        );
        let (id, _) = busy.next_request().await;
        busy.send(Some(&id), thread_update("t-busy", pb::ThreadStatus::Ready))
            .await;
        answer(call).await;
        (busy, agent, "t-busy".to_owned())
    };
    let call = h.post_later(
        &format!("/v1/threads/{thread_id}/messages"),
        json!({"text": "go"}),
    );
    let (id, _) = busy.next_request().await;
    busy.send(
        Some(&id),
        support::turn_update("turn-1", pb::TurnStatus::Running),
    )
    .await;
    assert_eq!(answer(call).await.0, 202);

    let _other = FakeRunner::connect(h.grpc, &other_token, offering("gantry", &["m2"])).await;
    let mut idle = FakeRunner::connect(h.grpc, &idle_token, offering("gantry", &["m1"])).await;
    let (_, runners) = h.get("/v1/runners").await;
    let busy_listed = runners
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "busy")
        .unwrap();
    assert_eq!(busy_listed["running_turns"], 1);

    let call = h.post_later("/v1/agents", json!({"model": "m1"}));
    let (id, request) = idle.next_request().await;
    let RunnerRequest::CreateAgentRequest(create) = request else {
        panic!("{request:?}");
    };
    idle.send(
        Some(&id),
        agent_update(&create.agent_id, pb::AgentStatus::Ready),
    )
    .await;
    let (status, agent) = answer(call).await;
    assert_eq!(status, 201);
    assert_eq!(agent["runner_id"], idle_id.as_str());
    assert_ne!(agent["runner_id"], other_id.as_str());
    h.stop().await;
}

#[tokio::test]
async fn no_runner_offering_the_sdk_is_400_naming_what_was_asked() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (_, token) = h.add_runner("r1").await;
    let _runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;

    // No runner offers it, connected or not: the request is wrong (an
    // offline runner offering it is 503, see tests/security.rs).
    let (status, body) = h.post("/v1/agents", json!({"sdk": "codex"})).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"codex\""),
        "{body}"
    );

    let (status, body) = h.post("/v1/agents", json!({"model": "m9"})).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"m9\""),
        "{body}"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_refused_request_is_409_with_the_runners_text() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (runner_id, token) = h.add_runner("r1").await;
    let mut runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;

    let call = h.post_later("/v1/agents", json!({"runner_id": runner_id}));
    let (id, _) = runner.next_request().await;
    runner
        .send(Some(&id), request_error("unknown agent sdk: gantry"))
        .await;

    let (status, body) = answer(call).await;
    assert_eq!(status, 409);
    assert_eq!(body["error"]["message"], "unknown agent sdk: gantry");
    let (_, agents) = h.get("/v1/agents").await;
    assert_eq!(agents, json!([]));
    h.stop().await;
}

#[tokio::test]
async fn a_runner_that_never_answers_is_504_after_the_request_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), Duration::from_millis(300)).await;
    let (_, token) = h.add_runner("r1").await;
    let mut runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;

    let call = h.post_later("/v1/agents", json!({}));
    runner.next_request().await;

    let (status, body) = answer(call).await;
    assert_eq!(status, 504);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{body}"
    );
    h.stop().await;
}

#[tokio::test]
async fn an_offline_runner_is_503_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (runner_id, _) = h.add_runner("r1").await;

    let (status, body) = h.post("/v1/agents", json!({"runner_id": runner_id})).await;
    assert_eq!(status, 503);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("offline"),
        "{body}"
    );

    let (status, _) = h.post("/v1/agents", json!({"runner_id": "nope"})).await;
    assert_eq!(status, 404);
    h.stop().await;
}

#[tokio::test]
async fn a_thread_takes_the_id_the_runner_chose_and_its_agents_default_model() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (_runner, agent_id, thread_id) = runner_with_thread(&h, "r1").await;

    let (status, thread) = h.get(&format!("/v1/threads/{thread_id}")).await;
    assert_eq!(status, 200);
    assert_eq!(thread["agent_id"], agent_id.as_str());
    assert_eq!(thread["model"], "m1");
    assert_eq!(thread["status"], "ready");
    assert_eq!(thread["turns"], json!([]));
    let (_, threads) = h.get(&format!("/v1/agents/{agent_id}/threads")).await;
    assert_eq!(threads[0]["id"], thread_id.as_str());
    h.stop().await;
}

#[tokio::test]
async fn skills_threads_and_agents_are_installed_and_deleted_on_the_runner() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (mut runner, agent_id, thread_id) = runner_with_thread(&h, "r1").await;

    let call = h.post_later(
        &format!("/v1/agents/{agent_id}/skills"),
        json!({"package_name": "acme/review"}),
    );
    let (id, request) = runner.next_request().await;
    let RunnerRequest::InstallSkillsMpRequest(install) = request else {
        panic!("{request:?}");
    };
    assert_eq!(install.package_name, "acme/review");
    runner
        .send(
            Some(&id),
            pb::client_message::Payload::SkillMpUpdate(pb::SkillMpUpdate {
                agent_id: agent_id.clone(),
                status: pb::SkillMpStatus::Installed.into(),
                package_name: "acme/review".into(),
            }),
        )
        .await;
    let (status, skill) = answer(call).await;
    assert_eq!((status, &skill["status"]), (201, &json!("installed")));

    let call = h.delete_later(&format!("/v1/threads/{thread_id}"));
    let (id, request) = runner.next_request().await;
    assert!(
        matches!(request, RunnerRequest::DeleteThreadRequest(ref d) if d.thread_id == thread_id)
    );
    runner
        .send(
            Some(&id),
            thread_update(&thread_id, pb::ThreadStatus::Deleted),
        )
        .await;
    let (status, thread) = answer(call).await;
    assert_eq!((status, &thread["status"]), (200, &json!("deleted")));
    let (status, _) = h
        .post(
            &format!("/v1/threads/{thread_id}/messages"),
            json!({"text": "hi"}),
        )
        .await;
    assert_eq!(status, 409);

    let call = h.delete_later(&format!("/v1/agents/{agent_id}"));
    let (id, _) = runner.next_request().await;
    runner
        .send(Some(&id), agent_update(&agent_id, pb::AgentStatus::Deleted))
        .await;
    let (status, agent) = answer(call).await;
    assert_eq!((status, &agent["status"]), (200, &json!("deleted")));
    assert_eq!(agent["skills"][0]["package_name"], "acme/review");
    let (_, agents) = h.get("/v1/agents").await;
    assert_eq!(agents, json!([]));
    h.stop().await;
}

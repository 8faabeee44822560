//! What survives: a request pending while its runner reconnects is sent
//! again with the same id; a control-plane restart keeps runners, agents,
//! threads and their history.

mod control_plane_support;

use std::time::Duration;

use control_plane_support::{
    FakeRunner, Harness, agent_update, answer, item_update, offering, take_events, thread_update,
    turn_update,
};
use proto_runner_control::pb::server_message::Request as RunnerRequest;
use proto_runner_control::pb::{self, ItemStatus, ItemType, TurnStatus};
use serde_json::json;

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

#[tokio::test]
async fn a_restart_keeps_runners_agents_threads_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
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

    let h = Harness::start(dir.path(), TIMEOUT).await;
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
async fn a_second_channel_of_the_same_runner_replaces_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (_, token) = h.add_runner("r1").await;
    let mut old = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;
    let mut new = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;

    assert!(old.closed().await);
    let call = h.post_later("/v1/agents", json!({"agent_id": "a1"}));
    let (id, _) = new.next_request().await;
    new.send(Some(&id), agent_update("a1", pb::AgentStatus::Ready))
        .await;
    assert_eq!(answer(call).await.0, 201);
    let (_, runners) = h.get("/v1/runners").await;
    assert_eq!(runners.as_array().unwrap().len(), 1);
    assert_eq!(runners[0]["connected"], true);
    h.stop().await;
}

//! The whole loop: a real Gantry runner (engine, mock LLM over HTTP) dials
//! the control plane; a user creates an agent and a thread over HTTP, sends
//! a message, and follows the turn to its end over SSE.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use gantry_core::{EngineBuilder, SingleModel};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_store::SqliteStore;
use gantry_testkit::{MockLlm, Script, Step};
use proto_runner_control::{self as runner, Backoff, ControlPlaneUrl, RunnerOptions};
use serde_json::{Value, json};
use support::{GUARD, Harness, guarded};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_gantry_runner_serves_a_users_message_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(&dir.path().join("cp"), Duration::from_secs(15)).await;
    let (runner_id, token) = h.add_runner("gantry-1").await;

    let llm = MockLlm::start(Script::new([Step::text("Hello from the mock.")])).unwrap();
    let mut config = ClientConfig::new(llm.base_url());
    config.retry.max_retries = 0;
    let models = Arc::new(SingleModel(Arc::new(
        OpenAiChatClient::new(config).unwrap(),
    )));
    let store = Arc::new(
        SqliteStore::open(&dir.path().join("runner/gantry.db"))
            .await
            .unwrap(),
    );
    let engine = EngineBuilder::new(store, models).start().await.unwrap();
    let options = RunnerOptions {
        url: ControlPlaneUrl::parse(&format!("http://{}", h.grpc)).unwrap(),
        failover: Vec::new(),
        protocol: runner::ProtocolVersion::V0_2,
        token,
        ca_pem: None,
        workspaces: dir.path().join("runner/workspaces"),
        backoff: Backoff::new(Duration::from_millis(20), Duration::from_millis(200)),
        command_env: None,
    };
    let stop = CancellationToken::new();
    let running = tokio::spawn(runner::run(engine.clone(), options, stop.clone()));

    // The runner connects on its own schedule and the control plane has no
    // event for it: poll the list, bounded.
    let model = wait_connected(&h, &runner_id).await;

    let (status, agent) = h.post("/v1/agents", json!({})).await;
    assert_eq!(status, 201, "{agent}");
    assert_eq!(agent["runner_id"], runner_id.as_str());
    let agent_id = agent["id"].as_str().unwrap();
    let (status, thread) = h
        .post(
            &format!("/v1/agents/{agent_id}/threads"),
            json!({"model": model}),
        )
        .await;
    assert_eq!(status, 201, "{thread}");
    let thread_id = thread["id"].as_str().unwrap().to_owned();

    let mut events = h.follow(&thread_id, None).await;
    let (status, accepted) = h
        .post(
            &format!("/v1/threads/{thread_id}/messages"),
            json!({"text": "hi"}),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    let turn_id = accepted["turn_id"].as_str().unwrap().to_owned();

    // Follow until the turn completes; seqs are dense from 1.
    let mut expected_seq = 1;
    loop {
        let event = guarded("the turn to complete", events.next())
            .await
            .unwrap();
        assert_eq!(event.id, expected_seq.to_string());
        expected_seq += 1;
        let data: Value = serde_json::from_str(&event.data).unwrap();
        if event.event == "turn" && data["data"]["status"] == "completed" {
            assert_eq!(data["data"]["id"], turn_id.as_str());
            break;
        }
    }

    let (_, thread) = h.get(&format!("/v1/threads/{thread_id}")).await;
    let turn = &thread["turns"][0];
    assert_eq!(turn["status"], "completed");
    let items = turn["items"].as_array().unwrap();
    let user = items.iter().find(|i| i["type"] == "user_message").unwrap();
    assert_eq!(user["text"], "hi");
    let reply = items.iter().find(|i| i["type"] == "agent_message").unwrap();
    assert_eq!(reply["text"], "Hello from the mock.");
    assert_eq!(reply["status"], "completed");

    stop.cancel();
    guarded("the runner to stop", running)
        .await
        .unwrap()
        .unwrap();
    h.stop().await;
}

/// Waits until the runner is listed as connected; the first model it offers.
async fn wait_connected(h: &Harness, runner_id: &str) -> String {
    let deadline = Instant::now() + GUARD;
    loop {
        let (_, runners) = h.get("/v1/runners").await;
        let runner = runners
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == runner_id)
            .cloned()
            .unwrap();
        if runner["connected"] == true {
            return runner["sdks"][0]["models"][0]["name"]
                .as_str()
                .unwrap()
                .to_owned();
        }
        assert!(Instant::now() < deadline, "the runner never connected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

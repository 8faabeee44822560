//! The dashboard a control plane serves at `/`, in a real browser (headless
//! chromium over WebDriver, `gantry_testkit::browser`), over a real Gantry
//! runner: the runners page shows the runner connected with its SDK and
//! model, its agent and that agent's thread, and the thread's page shows a
//! turn sent from it; after a restart of the control plane the page
//! reconnects by itself. With `GANTRY_DASHBOARD_SCREENSHOTS=DIR` the runners
//! page is saved there (how docs/ got its screenshot).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use gantry_control_plane::ControlPlaneOptions;
use gantry_core::{EngineBuilder, SingleModel};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_store::SqliteStore;
use gantry_testkit::browser::Browser;
use gantry_testkit::{MockLlm, Script, Step};
use proto_runner_control::{self as runner, Backoff, ControlPlaneUrl, RunnerOptions};
use serde_json::json;
use support::Harness;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runners_page_shows_a_connected_runner_its_agents_and_threads() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(&dir.path().join("cp"), Duration::from_secs(15)).await;
    let (runner_id, token) = h.add_runner("gantry-1").await;
    let answer = "Hello from the runner's mock model.";
    let llm = MockLlm::start(Script::new([Step::text(answer)])).unwrap();
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

    let browser = Browser::start().await;
    let home = format!("http://{}/", h.http);
    browser.goto(&home).await;
    // The page follows GET /v1/events, which says when runners change: it
    // shows the runner connected once it dialed in, whenever that is, with
    // no reload (and no polling).
    browser.wait_text("gantry-1").await;
    browser.wait_text("connected").await;
    let text = browser.text().await;
    assert!(text.contains(&runner_id), "{text}");
    assert!(!text.contains("not connected"), "{text}");

    let (status, agent) = h.post("/v1/agents", json!({})).await;
    assert_eq!(status, 201, "{agent}");
    let agent_id = agent["id"].as_str().unwrap().to_owned();
    let (_, runners) = h.get("/v1/runners").await;
    let model = runners[0]["sdks"][0]["models"][0]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, thread) = h
        .post(
            &format!("/v1/agents/{agent_id}/threads"),
            json!({"model": model}),
        )
        .await;
    assert_eq!(status, 201, "{thread}");
    let thread_id = thread["id"].as_str().unwrap().to_owned();
    // The agent and then its thread appear without a reload.
    browser.wait_text(&agent_id).await;
    browser.wait_text(&thread_id).await;
    browser.wait_text(&model).await;
    browser.wait_text("1 agent").await;
    browser.screenshot("control-plane-runners.png").await;

    // The thread's page sends a message; the runner's answer shows up live.
    browser.click(&format!("a[href='#/t/{thread_id}']")).await;
    browser.type_into("#message", "hi").await;
    browser.click("#send").await;
    browser.wait_text(answer).await;

    // A restart of the control plane: the runners page says it is
    // reconnecting, reconnects by itself, and reads what changed meanwhile.
    browser.click("a[href='#/']").await;
    browser.wait_text(&thread_id).await;
    let http = h.http.to_string();
    h.stop().await;
    browser.wait_text("reconnecting").await;
    let again = Harness::start_on(
        &dir.path().join("cp"),
        ControlPlaneOptions::default(),
        &http,
    )
    .await;
    again.add_runner("gantry-2").await;
    browser.wait_text("gantry-2").await;
    browser.wait_text("live").await;

    stop.cancel();
    drop(browser);
    let _ = running.await;
    again.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_page_says_a_turn_was_interrupted() {
    use gantry_runner_protocol::v0_7 as pb7;
    use gantry_runner_protocol::v0_7::server_message::Request;
    use support::runner_v0_7::{TURN, start_turn, thread_on_a_0_7_runner, turn7};

    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), Duration::from_secs(15)).await;
    let (mut runner, thread) = thread_on_a_0_7_runner(&h).await;
    let message = start_turn(&h, &mut runner, &thread).await;
    let browser = Browser::start().await;
    browser
        .goto(&format!("http://{}/#/t/{thread}", h.http))
        .await;
    browser.wait_text("turn running").await;

    // The page's own Interrupt button; the runner answers as CompanyHelm's
    // does, with the turn completed under the message's request id.
    browser.click("#interrupt").await;
    let (_, request) = runner.next_request().await;
    assert!(
        matches!(request, Request::InterruptTurnRequest(_)),
        "{request:?}"
    );
    runner
        .send(
            Some(&message),
            turn7(&thread, TURN, pb7::TurnStatus::Completed),
        )
        .await;
    browser.wait_text("turn interrupted").await;
    // The cut message ended with its turn (its label is upper-cased).
    let text = browser.text().await.to_lowercase();
    assert!(text.contains("agent message · interrupted"), "{text}");
    drop(browser);
    h.stop().await;
}

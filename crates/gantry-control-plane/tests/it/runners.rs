//! Runners connecting to the control plane: authentication, registration,
//! the runner list, and the GitHub rpcs without an app.

use crate::support;

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use gantry_runner_protocol::v0_2 as pb;
use support::{
    FakeRunner, GUARD, Harness, StoreAt, client, guarded, offering, on_both_backends,
    runner_with_thread, take_events,
};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

const TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn an_unknown_token_is_unauthenticated_on_every_rpc() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    h.add_runner("known").await;
    let mut stranger = client(h.grpc, "not-a-token").await;

    let status = stranger
        .register_runner(offering("gantry", &["m1"]))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);

    let (_tx, rx) = tokio::sync::mpsc::channel::<pb::ClientMessage>(1);
    let status = stranger
        .control_channel(ReceiverStream::new(rx))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);

    let status = stranger
        .list_github_installations_for_runner(pb::ListGithubInstallationsForRunnerRequest {})
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    h.stop().await;
}

#[tokio::test]
async fn an_invalid_registration_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (_, token) = h.add_runner("r1").await;
    let mut runner = client(h.grpc, &token).await;
    let mut registration = offering("gantry", &["m1"]);
    registration.agent_sdks[0].models[0].name.clear();

    let status = runner.register_runner(registration).await.unwrap_err();

    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("agent_sdks[0].models[0].name"),
        "{}",
        status.message()
    );
    h.stop().await;
}

#[tokio::test]
async fn a_connected_runner_is_listed_with_its_models_until_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (id, token) = h.add_runner("builder-1").await;

    let (status, runners) = h.get("/v1/runners").await;
    assert_eq!(status, 200);
    assert_eq!(runners[0]["connected"], false);

    let runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1", "m2"])).await;
    let (_, runners) = h.get("/v1/runners").await;
    let listed = &runners[0];
    assert_eq!(listed["id"], id.as_str());
    assert_eq!(listed["name"], "builder-1");
    assert_eq!(listed["connected"], true);
    assert_eq!(listed["sdks"][0]["name"], "gantry");
    assert_eq!(listed["sdks"][0]["models"][1]["name"], "m2");
    assert_eq!(listed["sdks"][0]["models"][1]["reasoning"][1], "high");
    assert_eq!(listed["running_turns"], 0);

    // The control plane learns of the drop from the transport, with no
    // event a client can wait on: poll the list, bounded.
    drop(runner);
    let deadline = Instant::now() + GUARD;
    loop {
        let (_, runners) = h.get("/v1/runners").await;
        if runners[0]["connected"] == false {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the runner is still listed as connected"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Offers are remembered for when it comes back.
    let (_, runners) = h.get("/v1/runners").await;
    assert_eq!(runners[0]["sdks"][0]["models"][0]["name"], "m1");
    h.stop().await;
}

#[tokio::test]
async fn stopping_the_control_plane_closes_runner_channels_and_live_streams() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (mut runner, _, thread_id) = runner_with_thread(&h, "r1").await;
    let mut events = h.follow(&thread_id, None).await;
    take_events(&mut events, 1).await;

    h.stop().await;

    assert!(runner.closed().await);
    assert!(
        guarded("the SSE stream to end", events.next())
            .await
            .is_none()
    );
}

on_both_backends!(
    a_runner_token_is_stored_only_as_its_hash,
    a_runner_added_by_another_process_can_connect_at_once,
);

async fn a_runner_token_is_stored_only_as_its_hash(at: StoreAt) {
    let h = Harness::start_at(&at, TIMEOUT).await;
    let (id, token) = h.add_runner("r1").await;
    h.stop().await;

    assert_eq!(token.len(), 64, "32 random bytes, hex");
    let store = at.open().await;
    let stored = store.runners().await.unwrap();
    assert_eq!(stored[0].id, id);
    assert_ne!(stored[0].token_hash, token);
    assert_eq!(stored[0].token_hash.len(), 64, "SHA-256, hex");
    store.close().await;
    let raw = at.raw_credentials().await;
    assert!(
        !raw.windows(token.len()).any(|w| w == token.as_bytes()),
        "the token is in the database"
    );
}

async fn a_runner_added_by_another_process_can_connect_at_once(at: StoreAt) {
    let h = Harness::start_at(&at, TIMEOUT).await;
    // What `gantry control-plane add-runner` does: straight into the store.
    let store = at.open().await;
    let (_, token) = gantry_control_plane::add_runner(store.as_ref(), "late", None)
        .await
        .unwrap();

    let mut runner = client(h.grpc, &token).await;
    runner
        .register_runner(offering("gantry", &["m1"]))
        .await
        .unwrap();
    h.stop().await;
}

#[tokio::test]
async fn github_rpcs_without_an_app_are_unimplemented() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (_, token) = h.add_runner("r1").await;
    let mut runner = client(h.grpc, &token).await;

    let status = runner
        .list_github_installations_for_runner(pb::ListGithubInstallationsForRunnerRequest {})
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented);
    assert_eq!(status.message(), "no GitHub App configured");

    let status = runner
        .get_github_installation_access_token_for_runner(
            pb::GetGithubInstallationAccessTokenForRunnerRequest { installation_id: 1 },
        )
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented);
    h.stop().await;
}

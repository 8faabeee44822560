//! GitHub installation tokens through the whole chain: a runner asks the
//! control plane, which signs in as the GitHub App and mints them from a
//! fake GitHub API; a runner gets only the installations it is allowed.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use gantry_control_plane::ControlPlaneOptions;
use gantry_control_plane::github::GithubApp;
use gantry_runner_protocol::v0_2 as pb;
use gantry_testkit::github::{APP_PRIVATE_KEY_PEM, APP_PUBLIC_KEY_PEM, FakeGithub};
use proto_runner_control::{GithubTokens, git_env};
use support::{Harness, client, guarded};
use tonic::Code;

const APP_ID: i64 = 4242;

#[tokio::test]
async fn a_runner_gets_tokens_for_its_installations_only() {
    let dir = tempfile::tempdir().unwrap();
    let github = FakeGithub::start(APP_ID, APP_PUBLIC_KEY_PEM).unwrap();
    github.add_installation(7, &["acme/widgets"]);
    github.add_installation(8, &["acme/secrets"]);
    let app = GithubApp::builder(APP_ID.to_string(), APP_PRIVATE_KEY_PEM)
        .api_base_url(github.base_url())
        .runner_installations([("builder-1", [7])])
        .build()
        .unwrap();
    let options = ControlPlaneOptions {
        request_timeout: Duration::from_secs(10),
        github: Some(Arc::new(app)),
        ..ControlPlaneOptions::default()
    };
    let h = Harness::start_with(&dir.path().join("cp"), options).await;
    let (_, token) = h.add_runner("builder-1").await;
    let mut raw = client(h.grpc, &token).await;

    // What the runner itself uses: listed, minted once, cached.
    let tokens = GithubTokens::new(client(h.grpc, &token).await);
    assert_eq!(tokens.installations().await.unwrap(), [7]);
    let minted = tokens.token(7).await.unwrap();
    assert_eq!(github.token_installation(&minted.token), Some(7));
    assert_eq!(minted.repositories, ["acme/widgets"]);
    let again = tokens.token(7).await.unwrap();
    assert_eq!(again.token, minted.token);
    assert_eq!(github.minted(), [7], "minted once, then cached");
    let env = git_env(&minted);
    assert!(env.contains(&("GH_TOKEN".to_owned(), minted.token.clone())));

    // Another installation of the app is not this runner's.
    let refused = guarded(
        "a refusal",
        raw.get_github_installation_access_token_for_runner(
            pb::GetGithubInstallationAccessTokenForRunnerRequest { installation_id: 8 },
        ),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    // An id below 1 breaks the proto's rule.
    let invalid = guarded(
        "a refusal",
        raw.get_github_installation_access_token_for_runner(
            pb::GetGithubInstallationAccessTokenForRunnerRequest { installation_id: 0 },
        ),
    )
    .await
    .unwrap_err();
    assert_eq!(invalid.code(), Code::InvalidArgument);
    assert!(invalid.message().contains("installation_id"), "{invalid:?}");
    assert_eq!(github.minted(), [7], "nothing minted for refused asks");

    // The token is in no file of the control plane's.
    for entry in std::fs::read_dir(dir.path().join("cp")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(&minted.token));
    }
    h.stop().await;
}

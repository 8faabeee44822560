//! `GithubApp` against the testkit's fake GitHub API over real HTTP: it
//! signs in as the app, lists installations, mints tokens, and fails clearly.

use std::time::{SystemTime, UNIX_EPOCH};

use gantry_control_plane::github::{GithubApp, GithubError, GithubInstallations};
use gantry_testkit::github::{
    APP_PRIVATE_KEY_PEM, APP_PRIVATE_KEY_PKCS8_PEM, APP_PUBLIC_KEY_PEM, FakeGithub,
    STRANGER_PRIVATE_KEY_PEM,
};

const APP_ID: i64 = 42;

/// A fake GitHub knowing app 42, installed on two accounts.
fn github() -> FakeGithub {
    let github = FakeGithub::start(APP_ID, APP_PUBLIC_KEY_PEM).expect("fake github");
    github.add_installation(7, &["acme/api", "acme/web"]);
    github.add_installation(8, &["umbrella/site"]);
    github
}

fn app(github: &FakeGithub, key: &str) -> GithubApp {
    GithubApp::builder(APP_ID.to_string(), key)
        .api_base_url(github.base_url())
        .build()
        .expect("app")
}

fn now_ms() -> i64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(since_epoch.as_millis()).unwrap()
}

#[tokio::test]
async fn lists_the_apps_installations_as_the_app() {
    let github = github();
    let app = app(&github, APP_PRIVATE_KEY_PEM);

    assert_eq!(app.installations("any-runner").await.unwrap(), [7, 8]);

    let requests = github.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("GET", "/app/installations")
    );
    assert!(
        request
            .header("authorization")
            .unwrap()
            .starts_with("Bearer ey")
    );
    assert_eq!(
        request.header("accept"),
        Some("application/vnd.github+json")
    );
    assert_eq!(request.header("x-github-api-version"), Some("2022-11-28"));
    assert!(
        request
            .header("user-agent")
            .is_some_and(|ua| ua.starts_with("gantry/"))
    );
}

#[tokio::test]
async fn lists_installations_across_pages() {
    let github = FakeGithub::start(APP_ID, APP_PUBLIC_KEY_PEM).unwrap();
    let ids: Vec<i64> = (1..=150).collect();
    for id in &ids {
        github.add_installation(*id, &[]);
    }
    let app = app(&github, APP_PRIVATE_KEY_PEM);

    assert_eq!(app.installations("r").await.unwrap(), ids);
    assert_eq!(github.requests().len(), 2);
}

#[tokio::test]
async fn mints_a_token_and_lists_the_repositories_it_opens() {
    let github = github();
    let app = app(&github, APP_PRIVATE_KEY_PEM);

    let token = app.token("any-runner", 7).await.unwrap();
    assert_eq!(token.installation_id, 7);
    assert_eq!(github.token_installation(&token.token), Some(7));
    assert_eq!(token.repositories, ["acme/api", "acme/web"]);
    // The fake's tokens live an hour; seconds precision on the wire.
    let left = token.expires_at_ms - now_ms();
    assert!((3_500_000..=3_600_000).contains(&left), "{left} ms left");

    // GitHub left the repositories out: they were asked with the new token.
    let requests = github.requests();
    let asked: Vec<_> = requests
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    assert_eq!(
        asked,
        [
            ("POST", "/app/installations/7/access_tokens"),
            ("GET", "/installation/repositories")
        ]
    );
    assert_eq!(
        requests[1].header("authorization"),
        Some(format!("token {}", token.token).as_str())
    );
}

#[tokio::test]
async fn takes_the_repositories_from_the_token_answer_when_github_lists_them() {
    let github = github();
    github.set_repositories_in_token_response(true);
    let app = app(&github, APP_PRIVATE_KEY_PEM);

    let token = app.token("any-runner", 8).await.unwrap();
    assert_eq!(token.repositories, ["umbrella/site"]);
    assert_eq!(github.requests().len(), 1);
}

#[tokio::test]
async fn a_pkcs8_key_works_like_githubs_pkcs1_one() {
    let github = github();
    let app = app(&github, APP_PRIVATE_KEY_PKCS8_PEM);
    let token = app.token("any-runner", 7).await.unwrap();
    assert_eq!(github.minted(), [7]);
    assert!(!token.token.is_empty());
}

#[tokio::test]
async fn a_key_github_does_not_know_is_refused_with_githubs_message() {
    let github = github();
    let app = app(&github, STRANGER_PRIVATE_KEY_PEM);

    let err = app.token("any-runner", 7).await.unwrap_err();
    let GithubError::Api { status, message } = &err else {
        panic!("expected a GitHub API error, got {err:?}");
    };
    assert_eq!(*status, 401);
    assert_eq!(message, "A JSON web token could not be decoded");
    assert_eq!(
        err.to_string(),
        "GitHub API answered 401: A JSON web token could not be decoded"
    );
    assert!(github.minted().is_empty());
    assert!(matches!(
        app.installations("any-runner").await,
        Err(GithubError::Api { status: 401, .. })
    ));
}

#[tokio::test]
async fn the_wrong_app_id_is_refused() {
    let github = github();
    let app = GithubApp::builder("43", APP_PRIVATE_KEY_PEM)
        .api_base_url(github.base_url())
        .build()
        .unwrap();
    let err = app.installations("r").await.unwrap_err();
    assert!(
        matches!(&err, GithubError::Api { status: 401, message } if message == "Integration not found"),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_key_that_is_not_a_key_is_refused_when_building() {
    let err = GithubApp::builder("42", "-----BEGIN RSA PRIVATE KEY-----\nnot base64!\n")
        .build()
        .unwrap_err();
    assert!(matches!(err, GithubError::BadKey(_)), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("invalid GitHub App private key: "),
        "{err}"
    );
}

#[tokio::test]
async fn an_unreachable_api_is_a_clear_error() {
    // A port that was free a moment ago: nothing listens there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let app = GithubApp::builder(APP_ID.to_string(), APP_PRIVATE_KEY_PEM)
        .api_base_url(format!("http://{addr}"))
        .build()
        .unwrap();

    let err = app.token("r", 7).await.unwrap_err();
    let GithubError::Unreachable { url, reason } = &err else {
        panic!("expected an unreachable API, got {err:?}");
    };
    assert_eq!(
        url,
        &format!("http://{addr}/app/installations/7/access_tokens")
    );
    assert!(reason.to_lowercase().contains("refused"), "{reason}");
}

#[tokio::test]
async fn an_installation_the_app_lacks_is_not_found() {
    let github = github();
    let app = app(&github, APP_PRIVATE_KEY_PEM);
    let err = app.token("r", 99).await.unwrap_err();
    assert!(
        matches!(&err, GithubError::Api { status: 404, message } if message == "Not Found"),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_runner_gets_only_the_installations_it_is_allowed() {
    let github = github();
    github.add_installation(9, &["acme/docs"]);
    let app = GithubApp::builder(APP_ID.to_string(), APP_PRIVATE_KEY_PEM)
        .api_base_url(github.base_url())
        // 100 is no longer installed: it is not listed.
        .runner_installations([("runner-a", vec![7, 9, 100]), ("runner-b", vec![])])
        .build()
        .unwrap();

    assert_eq!(app.installations("runner-a").await.unwrap(), [7, 9]);
    assert_eq!(github.requests().len(), 1);

    // Refused before GitHub is asked anything.
    for (runner, id) in [("runner-a", 8), ("runner-b", 7), ("stranger", 7)] {
        let err = app.token(runner, id).await.unwrap_err();
        assert!(
            matches!(&err, GithubError::NotAllowed { runner: r, installation_id } if r == runner && *installation_id == id),
            "{err:?}"
        );
    }
    assert!(app.installations("runner-b").await.unwrap().is_empty());
    assert!(app.installations("stranger").await.unwrap().is_empty());
    assert_eq!(github.requests().len(), 1);

    assert_eq!(
        app.token("runner-a", 9).await.unwrap().repositories,
        ["acme/docs"]
    );
}

#[tokio::test]
async fn a_bad_base_url_is_refused_when_building() {
    let err = GithubApp::builder("42", APP_PRIVATE_KEY_PEM)
        .api_base_url("api.github.com")
        .build()
        .unwrap_err();
    assert!(matches!(err, GithubError::Config(_)), "{err:?}");
}

#[tokio::test]
async fn neither_the_token_nor_the_key_shows_in_debug_output() {
    let github = github();
    let app = app(&github, APP_PRIVATE_KEY_PEM);
    let token = app.token("r", 7).await.unwrap();
    let shown = format!("{token:?} {app:?}");
    assert!(!shown.contains(&token.token), "{shown}");
    assert!(!shown.contains("PRIVATE KEY"), "{shown}");
}

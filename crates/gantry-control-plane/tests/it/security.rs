//! Who may drive the HTTP API: bodies must be JSON (a browser's simple
//! cross-origin request is not), requests must name this server (DNS
//! rebinding) and come from no foreign page, and bearer tokens are needed
//! once any exists or whenever the API listens beyond loopback; a read-only
//! one only reads.

use crate::support;

use std::time::Duration;

use gantry_control_plane::{ControlPlaneOptions, create_api_token, revoke_api_token};
use gantry_runner_protocol::v0_2 as pb;
use gantry_runner_protocol::v0_2::server_message::Request as RunnerRequest;
use serde_json::{Value, json};
use support::{FakeRunner, Harness, StoreAt, offering, on_both_backends, runner_with_thread};

const TIMEOUT: Duration = Duration::from_secs(10);

/// Status and JSON body of a request built by the test.
async fn call(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// The error text of a JSON error body.
fn error(body: &Value) -> &str {
    body["error"]["message"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_body_that_is_not_declared_json_is_415_and_does_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (_, token) = h.add_runner("r1").await;
    let runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;
    let _answering = runner.answer_everything();

    // What a page's `fetch(url, {method: "POST", body})` sends cross-origin
    // without a preflight: text/plain, a form, or no type at all.
    for content_type in [
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let mut request = h.client.post(h.url("/v1/agents")).body(r#"{"model":"m1"}"#);
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let (status, body) = call(request).await;
        assert_eq!(status, 415, "{content_type:?}: {body}");
        assert_eq!(error(&body), "Content-Type must be application/json");
    }
    let (_, agents) = h.get("/v1/agents").await;
    assert_eq!(agents, json!([]), "no agent was created");

    // Declared JSON (with parameters, any case) goes through.
    let request = h
        .client
        .post(h.url("/v1/agents"))
        .header("content-type", "Application/JSON; charset=utf-8")
        .body(r#"{"model":"m1"}"#);
    let (status, body) = call(request).await;
    assert_eq!(status, 201, "{body}");
    h.stop().await;
}

#[tokio::test]
async fn a_request_naming_another_host_is_421_and_a_foreign_page_403() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let port = h.http.port();

    // DNS rebinding: the page's own name, now resolving to 127.0.0.1.
    for host in [format!("evil.example:{port}"), "evil.example".to_owned()] {
        let request = h.client.get(h.url("/v1/runners")).header("host", &host);
        let (status, body) = call(request).await;
        assert_eq!(status, 421, "{host}: {body}");
        assert!(error(&body).contains("--allowed-host"), "{body}");
    }
    // Even the open document.
    let request = h
        .client
        .get(h.url("/openapi.json"))
        .header("host", "evil.example");
    assert_eq!(call(request).await.0, 421);

    // Loopback names are ours, in any case.
    for host in [
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("[::1]:{port}"),
    ] {
        let request = h.client.get(h.url("/v1/runners")).header("host", &host);
        assert_eq!(call(request).await.0, 200, "{host}");
    }

    // A page elsewhere (another site, another local port, a sandbox).
    for origin in [
        "http://evil.example".to_owned(),
        format!("http://evil.example:{port}"),
        "http://localhost:8080".to_owned(),
        "null".to_owned(),
        "file://".to_owned(),
    ] {
        let request = h
            .client
            .post(h.url("/v1/agents"))
            .header("origin", &origin)
            .header("content-type", "application/json")
            .body("{}");
        let (status, body) = call(request).await;
        assert_eq!(status, 403, "{origin}: {body}");
        assert!(error(&body).contains("Origin"), "{body}");
    }
    // The API's own origin may.
    for origin in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    ] {
        let request = h.client.get(h.url("/v1/runners")).header("origin", &origin);
        assert_eq!(call(request).await.0, 200, "{origin}");
    }
    h.stop().await;
}

#[tokio::test]
async fn an_allowed_host_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let options = ControlPlaneOptions {
        allowed_hosts: vec!["cp.internal".into(), "CP2.internal:7401".into()],
        ..ControlPlaneOptions::default()
    };
    let h = Harness::start_with(dir.path(), options).await;
    for host in ["cp.internal", "cp.internal:80", "cp2.internal:7401"] {
        let request = h.client.get(h.url("/v1/runners")).header("host", host);
        assert_eq!(call(request).await.0, 200, "{host}");
    }
    let request = h
        .client
        .get(h.url("/v1/runners"))
        .header("host", "cp.internal:7401")
        .header("origin", "https://cp.internal:7401");
    assert_eq!(call(request).await.0, 200);
    h.stop().await;
}

on_both_backends!(
    once_a_token_exists_every_call_but_the_document_needs_one,
    an_api_token_name_is_taken_once_and_must_be_printable,
    a_read_only_token_reads_and_follows_but_changes_nothing,
);

async fn once_a_token_exists_every_call_but_the_document_needs_one(at: StoreAt) {
    let h = Harness::start_at(&at, TIMEOUT).await;
    // Loopback-only, no token: open.
    assert_eq!(h.get("/v1/runners").await.0, 200);

    // Tokens made by another process (`gantry control-plane create-token`).
    let store = at.open().await;
    let (alice, alice_token) = create_api_token(store.as_ref(), "alice", false)
        .await
        .unwrap();
    let (_, ci_token) = create_api_token(store.as_ref(), "ci", false).await.unwrap();
    assert_eq!(alice.name, "alice");
    assert_eq!(alice_token.len(), 64, "32 random bytes, hex");
    assert_ne!(alice.token_hash, alice_token);

    let response = h.client.get(h.url("/v1/runners")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 401);
    assert_eq!(
        response.headers()["www-authenticate"],
        "Bearer realm=\"gantry control plane\""
    );
    let body: Value = response.json().await.unwrap();
    assert!(error(&body).contains("Authorization: Bearer"), "{body}");

    // Unknown routes, writes and streams alike.
    assert_eq!(h.get("/v1/nothing-here").await.0, 401);
    assert_eq!(h.post("/v1/agents", json!({})).await.0, 401);
    assert_eq!(h.get("/v1/threads/t1/events").await.0, 401);
    assert_eq!(h.get("/openapi.json").await.0, 200, "the document is open");

    let bearer = |token: &str| {
        h.client
            .get(h.url("/v1/runners"))
            .header("authorization", format!("Bearer {token}"))
    };
    assert_eq!(call(bearer(&alice_token)).await.0, 200);
    assert_eq!(call(bearer(&ci_token)).await.0, 200);
    let request = h
        .client
        .get(h.url("/v1/runners"))
        .header("authorization", format!("bearer {ci_token}"));
    assert_eq!(call(request).await.0, 200, "the scheme is case-insensitive");
    let (status, body) = call(bearer(&alice_token[..63])).await;
    assert_eq!(status, 401);
    assert_eq!(error(&body), "unknown or revoked API token");
    let request = h
        .client
        .get(h.url("/v1/runners"))
        .header("authorization", format!("Basic {alice_token}"));
    assert_eq!(call(request).await.0, 401);

    // Revoked: refused from the next request on; the other still works.
    assert!(revoke_api_token(store.as_ref(), "alice").await.unwrap());
    assert_eq!(call(bearer(&alice_token)).await.0, 401);
    assert_eq!(call(bearer(&ci_token)).await.0, 200);
    h.stop().await;
}

#[tokio::test]
async fn beyond_loopback_every_call_needs_a_token_even_before_one_exists() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start_on(dir.path(), ControlPlaneOptions::default(), "0.0.0.0:0").await;

    let (status, body) = h.get("/v1/runners").await;
    assert_eq!(status, 401, "{body}");
    assert!(
        error(&body).contains("gantry control-plane create-token"),
        "{body}"
    );
    assert_eq!(h.get("/openapi.json").await.0, 200);

    let (_, token) = h.cp.create_api_token("ops", false).await.unwrap();
    let request = h
        .client
        .get(h.url("/v1/runners"))
        .header("authorization", format!("Bearer {token}"));
    assert_eq!(call(request).await.0, 200);
    h.stop().await;
}

async fn an_api_token_name_is_taken_once_and_must_be_printable(at: StoreAt) {
    let store = at.open().await;
    let store = store.as_ref();
    create_api_token(store, "ci", false).await.unwrap();
    let taken = create_api_token(store, "ci", false).await.unwrap_err();
    assert!(taken.to_string().contains("already exists"), "{taken}");
    assert!(create_api_token(store, "", false).await.is_err());
    assert!(create_api_token(store, "a\nb", false).await.is_err());
    assert!(!revoke_api_token(store, "nobody").await.unwrap());
}

#[tokio::test]
async fn an_invalid_agent_id_is_400_and_never_reaches_the_runner() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), Duration::from_millis(500)).await;
    let (_, token) = h.add_runner("r1").await;
    let mut runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;

    for id in ["../etc", "a b", ".", "x".repeat(129).as_str(), "agent/1"] {
        let (status, body) = h.post("/v1/agents", json!({"agent_id": id})).await;
        assert_eq!(status, 400, "{id}: {body}");
        assert!(error(&body).starts_with("agent_id: "), "{body}");
    }
    // The first request the runner sees is the valid one.
    let call = h.post_later("/v1/agents", json!({"agent_id": "ok-1.a_b"}));
    let (_, request) = runner.next_request().await;
    assert!(
        matches!(request, RunnerRequest::CreateAgentRequest(ref r) if r.agent_id == "ok-1.a_b"),
        "{request:?}"
    );
    drop(call);
    h.stop().await;
}

#[tokio::test]
async fn a_model_or_reasoning_level_the_runner_does_not_offer_is_400_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), Duration::from_millis(500)).await;
    // Offers gantry/m1 with reasoning low and high.
    let (mut runner, agent_id, thread_id) = runner_with_thread(&h, "r1").await;
    let threads = format!("/v1/agents/{agent_id}/threads");
    let messages = format!("/v1/threads/{thread_id}/messages");

    let cases = [
        (&threads, json!({"model": "nope"}), "model: "),
        (
            &threads,
            json!({"model": "m1", "reasoning_level": "ultra"}),
            "reasoning_level: ",
        ),
        (
            &threads,
            json!({"reasoning_level": "ultra"}),
            "reasoning_level: ",
        ),
        (&messages, json!({"text": "hi", "model": "nope"}), "model: "),
        (
            &messages,
            json!({"text": "hi", "reasoning_level": "ultra"}),
            "reasoning_level: ",
        ),
    ];
    for (path, body, field) in cases {
        let (status, answer) = h.post(path, body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(error(&answer).starts_with(field), "{body}: {answer}");
    }
    let (_, body) = h.post(&threads, json!({"model": "nope"})).await;
    assert!(
        error(&body).contains("\"m1\""),
        "names what is offered: {body}"
    );

    // None of them reached the runner: its next request is this one.
    let call = h.post_later(&threads, json!({"model": "m1", "reasoning_level": "high"}));
    let (_, request) = runner.next_request().await;
    assert!(
        matches!(request, RunnerRequest::CreateThreadRequest(ref r)
            if r.reasoning_level.as_deref() == Some("high")),
        "{request:?}"
    );
    drop(call);
    h.stop().await;
}

#[tokio::test]
async fn an_sdk_or_model_no_runner_offers_is_400_and_one_offered_offline_503() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (_, token) = h.add_runner("r1").await;
    let (offline_id, offline_token) = h.add_runner("r2").await;
    let _runner = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1"])).await;
    // r2 registers m2 and goes away.
    let offline = FakeRunner::connect(h.grpc, &offline_token, offering("gantry", &["m2"])).await;
    drop(offline);
    h.wait_disconnected(&offline_id).await;

    let (status, body) = h.post("/v1/agents", json!({"sdk": "codex"})).await;
    assert_eq!(status, 400, "{body}");
    assert!(error(&body).starts_with("sdk: "), "{body}");
    let (status, body) = h.post("/v1/agents", json!({"model": "m9"})).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        error(&body).starts_with("model: ") && error(&body).contains("\"m9\""),
        "{body}"
    );

    // Offered, by a runner that is not connected: later, maybe.
    let (status, body) = h.post("/v1/agents", json!({"model": "m2"})).await;
    assert_eq!(status, 503, "{body}");
    let (status, _) = h
        .post(
            "/v1/agents",
            json!({"runner_id": offline_id, "model": "m2"}),
        )
        .await;
    assert_eq!(status, 503);
    h.stop().await;
}

async fn a_read_only_token_reads_and_follows_but_changes_nothing(at: StoreAt) {
    let h = Harness::start_at(&at, TIMEOUT).await;
    let (mut runner, agent, thread) = runner_with_thread(&h, "r1").await;
    let (viewer, viewer_token) = h.cp.create_api_token("viewer", true).await.unwrap();
    assert!(viewer.read_only);
    let (ops, ops_token) = h.cp.create_api_token("ops", false).await.unwrap();
    assert!(!ops.read_only);
    let with = |request: reqwest::RequestBuilder, token: &str| {
        request.header("authorization", format!("Bearer {token}"))
    };

    // It reads: lists, a thread, its events (headers at once), HEAD.
    for path in [
        "/v1/runners",
        "/v1/agents",
        &format!("/v1/threads/{thread}"),
    ] {
        let (status, body) = call(with(h.client.get(h.url(path)), &viewer_token)).await;
        assert_eq!(status, 200, "GET {path}: {body}");
    }
    let events = with(
        h.client.get(h.url(&format!("/v1/threads/{thread}/events"))),
        &viewer_token,
    );
    let response = support::guarded("the events' headers", events.send())
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    drop(response);
    let head = with(h.client.head(h.url("/v1/runners")), &viewer_token);
    assert_eq!(head.send().await.unwrap().status().as_u16(), 200);

    // It writes nothing: 403 in the API's error shape, and no request
    // reaches the runner.
    let json = |request: reqwest::RequestBuilder, body: Value| {
        request
            .header("content-type", "application/json")
            .body(body.to_string())
    };
    let writes = [
        json(h.client.post(h.url("/v1/agents")), json!({})),
        json(
            h.client
                .post(h.url(&format!("/v1/threads/{thread}/messages"))),
            json!({"text": "from the viewer"}),
        ),
        json(
            h.client.post(h.url(&format!("/v1/agents/{agent}/threads"))),
            json!({}),
        ),
        h.client.delete(h.url(&format!("/v1/threads/{thread}"))),
        h.client.delete(h.url(&format!("/v1/agents/{agent}"))),
    ];
    for request in writes {
        let (status, body) = call(with(request, &viewer_token)).await;
        assert_eq!(status, 403, "{body}");
        assert_eq!(body["error"]["code"], "forbidden", "{body}");
        assert_eq!(body["error"]["details"], json!({}), "{body}");
        assert_eq!(
            error(&body),
            "API token \"viewer\" is read-only: it may only GET or HEAD"
        );
    }
    // The next request the runner gets is the read-write token's message.
    let send = with(
        json(
            h.client
                .post(h.url(&format!("/v1/threads/{thread}/messages"))),
            json!({"text": "from ops"}),
        ),
        &ops_token,
    );
    let sent = tokio::spawn(call(send));
    let (id, request) = runner.next_request().await;
    let RunnerRequest::CreateUserMessageRequest(message) = request else {
        panic!("expected the message of ops, got {request:?}");
    };
    assert_eq!(message.text, "from ops");
    runner
        .send(
            Some(&id),
            support::turn_update("turn-1", pb::TurnStatus::Running),
        )
        .await;
    let (status, body) = sent.await.unwrap();
    assert_eq!(status, 202, "{body}");
    h.stop().await;
}

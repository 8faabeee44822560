//! The HTTP API's contract: the OpenAPI document lists every route, and
//! errors are JSON with the status that says why.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::Harness;

/// Every route the API serves (method, path).
const ROUTES: &[(&str, &str)] = &[
    ("get", "/openapi.json"),
    ("get", "/"),
    ("get", "/assets/{file}"),
    ("get", "/v1/runners"),
    ("get", "/v1/agents"),
    ("post", "/v1/agents"),
    ("get", "/v1/agents/{id}"),
    ("delete", "/v1/agents/{id}"),
    ("post", "/v1/agents/{id}/skills"),
    ("get", "/v1/agents/{id}/threads"),
    ("post", "/v1/agents/{id}/threads"),
    ("get", "/v1/threads/{id}"),
    ("delete", "/v1/threads/{id}"),
    ("post", "/v1/threads/{id}/messages"),
    ("post", "/v1/threads/{id}/interrupt"),
    ("get", "/v1/threads/{id}/events"),
    ("get", "/v1/events"),
];

#[tokio::test]
async fn the_openapi_document_lists_every_route_and_every_listed_route_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), Duration::from_secs(10)).await;
    let (status, doc) = h.get("/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    for (method, path) in ROUTES {
        let operation = &doc["paths"][path][method];
        assert!(
            operation.is_object(),
            "{method} {path} is not in /openapi.json"
        );
        assert!(
            operation["responses"].is_object(),
            "{method} {path} has no responses"
        );
    }
    let documented: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|p| {
            p.as_object()
                .unwrap()
                .keys()
                .filter(|k| *k != "parameters")
                .count()
        })
        .sum();
    assert_eq!(
        documented,
        ROUTES.len(),
        "the document lists a route the test does not know"
    );

    // Each route exists on the server: whatever it answers, it is not the
    // "no such route" fallback (nor 405).
    for (method, path) in ROUTES {
        let url = h.url(&path.replace("{id}", "missing"));
        let request = match *method {
            "get" => h.client.get(url),
            "post" => h.client.post(url).body("{}"),
            "delete" => h.client.delete(url),
            other => panic!("{other}"),
        };
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        if response.headers()["content-type"] == "text/event-stream" {
            // A stream that never ends: served, then.
            assert_eq!(status, 200, "{method} {path}");
            continue;
        }
        let body = response.text().await.unwrap();
        assert_ne!(status, 405, "{method} {path}");
        assert!(!body.contains("no such route"), "{method} {path}: {body}");
    }
    h.stop().await;
}

#[tokio::test]
async fn errors_are_json_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), Duration::from_secs(10)).await;

    let (status, body) = h.get("/v1/nothing-here").await;
    assert_eq!(status, 404);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no such route")
    );

    let (status, body) = h.get("/v1/threads/t-missing").await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["message"], "thread t-missing not found");

    let (status, body) = h.post("/v1/threads/t-missing/messages", json!({})).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`text`"),
        "{body}"
    );

    let (status, body) = h
        .post("/v1/threads/t-missing/messages", json!({"text": " "}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["message"], "text: must not be empty");

    let (status, body) = h
        .post("/v1/agents", json!({"sdk": "gantry", "colour": "red"}))
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`colour`"),
        "{body}"
    );

    let (status, body) = h.post("/v1/agents", json!({"agent_id": ""})).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["message"], "agent_id: must not be empty");
    h.stop().await;
}

/// `schemathesis` fuzzes the API from its own document against a real
/// control plane with a runner that does what it is asked, and finds no
/// 5xx. Left out: the event streams (they never end). Found as
/// `$GANTRY_TEST_SCHEMATHESIS`, else on PATH (`.ci/run` installs it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_driven_fuzz_finds_no_server_error() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), Duration::from_secs(5)).await;
    let (runner, _agent, _thread) = support::runner_with_thread(&h, "fuzzed").await;
    let answering = runner.answer_everything();
    let binary =
        std::env::var("GANTRY_TEST_SCHEMATHESIS").unwrap_or_else(|_| "schemathesis".into());
    let out = tokio::process::Command::new(&binary)
        .args([
            "run",
            &h.url("/openapi.json"),
            "--checks",
            "not_a_server_error",
        ])
        .args(["--max-examples", "5", "--phases", "coverage,fuzzing"])
        .args([
            "--workers",
            "2",
            "--request-timeout",
            "10",
            "--seed",
            "7401",
        ])
        .args(["--exclude-path-regex", "/events$"])
        .current_dir(dir.path())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run {binary} ({e}): .ci/run installs it from PyPI"));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis found problems:\n{report}"
    );
    assert!(report.contains("passed"), "{report}");
    answering.abort();
    h.stop().await;
}

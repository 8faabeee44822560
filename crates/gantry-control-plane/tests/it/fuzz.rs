//! Every JSON body the HTTP API takes, fuzzed against the real server on an
//! ephemeral port with a runner that does what it is asked: arbitrary
//! bytes, arbitrary JSON, and objects of the bodies' own fields with values
//! of any type. Nothing may answer 5xx (a bad body is the caller's fault)
//! and the server must stay up.

use crate::support;

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};
use support::{FakeRunner, Harness, offering, runner_with_thread};

/// Cases per body kind.
const CASES: u32 = 256;

/// The bodies' field names, so generated objects often hit real fields.
const FIELDS: &[&str] = &[
    "agent_id",
    "sdk",
    "runner_id",
    "model",
    "reasoning_level",
    "package_name",
    "text",
    "allow_steer",
];

/// Strings worth trying: offered names, ids, paths, odd characters.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("m1".to_owned()),
        Just("gantry".to_owned()),
        Just("low".to_owned()),
        Just("ultra".to_owned()),
        Just(String::new()),
        Just("..".to_owned()),
        Just("\u{0}".to_owned()),
        "[a-z0-9._-]{1,12}",
        any::<String>(),
    ]
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..4)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// An object of the bodies' fields (and sometimes a stranger) with values
/// of any type, mostly strings.
fn field_object() -> impl Strategy<Value = Value> {
    let value = prop_oneof![
        3 => text().prop_map(Value::String),
        1 => json_value(),
    ];
    let key = prop_oneof![
        8 => prop::sample::select(FIELDS).prop_map(str::to_owned),
        1 => text(),
    ];
    prop::collection::vec((key, value), 0..5)
        .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>()))
}

/// A body: raw bytes, any JSON, or an object of the fields.
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..256),
        1 => json_value().prop_map(|v| v.to_string().into_bytes()),
        3 => field_object().prop_map(|v| v.to_string().into_bytes()),
    ]
}

#[test]
fn no_body_makes_the_api_fail_or_fall_over() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (h, agent_id, thread_id) = rt.block_on(async {
        let h = Harness::start(dir.path(), Duration::from_secs(10)).await;
        let (runner, agent_id, thread_id) = runner_with_thread(&h, "r1").await;
        // From here on the runner answers everything by itself.
        drop(runner.answer_everything());
        // A second runner, so a body's runner_id may name one.
        let (_, token) = h.add_runner("r2").await;
        let other = FakeRunner::connect(h.grpc, &token, offering("gantry", &["m1", "m2"])).await;
        drop(other.answer_everything());
        (h, agent_id, thread_id)
    });
    let paths = [
        "/v1/agents".to_owned(),
        format!("/v1/agents/{agent_id}/skills"),
        format!("/v1/agents/{agent_id}/threads"),
        format!("/v1/threads/{thread_id}/messages"),
    ];
    for path in &paths {
        let config = Config {
            cases: CASES,
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let outcome = runner.run(&body(), |bytes| {
            let request = h
                .client
                .post(h.url(path))
                .header("content-type", "application/json")
                .body(bytes.clone());
            let (status, answer) = rt
                .block_on(async {
                    let response = request.send().await.map_err(|e| e.to_string())?;
                    let status = response.status().as_u16();
                    let answer = response.text().await.map_err(|e| e.to_string())?;
                    Ok::<_, String>((status, answer))
                })
                .map_err(|e| TestCaseError::fail(format!("no answer (server down?): {e}")))?;
            let shown = String::from_utf8_lossy(&bytes);
            prop_assert!(status < 500, "POST {path} {shown:?}: {status} {answer}");
            // Every answer is JSON (errors are `{"error": ...}`).
            prop_assert!(
                serde_json::from_str::<Value>(&answer).is_ok(),
                "POST {path} {shown:?}: {status} not JSON: {answer}"
            );
            Ok(())
        });
        if let Err(failure) = outcome {
            panic!("{path}: {failure}");
        }
    }
    // Still serving.
    let (status, _) = rt.block_on(h.get("/v1/runners"));
    assert_eq!(status, 200);
    rt.block_on(h.stop());
}

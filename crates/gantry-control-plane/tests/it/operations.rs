//! Operating a replica: liveness and readiness probes, Prometheus metrics,
//! and the drain on a stop (no new runner, requests in flight answered).

use crate::support;

use std::time::Duration;

use gantry_control_plane::ControlPlaneOptions;
use gantry_runner_protocol::v0_2::{ItemStatus, ItemType, TurnStatus};
use serde_json::json;
use support::{
    Backend, FakeRunner, Harness, StoreAt, answer, guarded, item_update, offering,
    runner_with_thread, turn_update,
};
use tonic::Code;

const TIMEOUT: Duration = Duration::from_secs(10);

/// `GET path` as text: status and body.
async fn text(h: &Harness, path: &str) -> (u16, String) {
    let response = guarded("an HTTP answer", h.client.get(h.url(path)).send())
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// The value of an unlabelled series (or a bucket line) in an exposition.
fn series(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{name} missing in:\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn probes_answer_and_metrics_count_runners_round_trips_and_updates() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    assert_eq!(text(&h, "/healthz").await.0, 200);
    let (status, ready) = h.get("/readyz").await;
    assert_eq!((status, &ready["store"]), (200, &json!("ok")), "{ready}");

    let (mut runner, _, thread_id) = runner_with_thread(&h, "r1").await;
    let call = h.post_later(
        &format!("/v1/threads/{thread_id}/messages"),
        json!({"text": "hi"}),
    );
    let (id, _) = runner.next_request().await;
    runner
        .send(Some(&id), turn_update("turn-1", TurnStatus::Running))
        .await;
    assert_eq!(answer(call).await.0, 202);
    runner
        .send(
            Some(&id),
            item_update("i1", ItemType::AgentMessage, ItemStatus::Completed, "done"),
        )
        .await;
    runner
        .send(Some(&id), turn_update("turn-1", TurnStatus::Completed))
        .await;
    // The turn's end is applied once the thread's log shows it.
    let mut events = h.follow(&thread_id, Some(2)).await;
    support::take_events(&mut events, 2).await;

    let (status, metrics) = text(&h, "/metrics").await;
    assert_eq!(status, 200);
    assert_eq!(series(&metrics, "gantry_cp_runners_connected"), 1.0);
    assert_eq!(series(&metrics, "gantry_cp_requests_in_flight"), 0.0);
    assert_eq!(series(&metrics, "gantry_cp_draining"), 0.0);
    // Thread ready, turn running, item, turn completed.
    assert_eq!(series(&metrics, "gantry_cp_updates_applied_total"), 4.0);
    // Agent, thread and message: three round trips.
    assert_eq!(series(&metrics, "gantry_cp_dispatch_seconds_count"), 3.0);
    assert_eq!(
        series(&metrics, "gantry_cp_dispatch_seconds_bucket{le=\"+Inf\"}"),
        3.0
    );
    h.stop().await;
}

#[tokio::test]
async fn a_stop_takes_no_new_runner_and_answers_the_requests_in_flight_first() {
    let dir = tempfile::tempdir().unwrap();
    let options = ControlPlaneOptions {
        request_timeout: TIMEOUT,
        // Longer than the test: the drain ends because the request is answered.
        drain: Duration::from_secs(60),
        ..ControlPlaneOptions::default()
    };
    let mut h = Harness::start_with(dir.path(), options).await;
    let (_, token) = h.add_runner("late").await;
    let (mut runner, _, thread_id) = runner_with_thread(&h, "r1").await;
    let call = h.post_later(
        &format!("/v1/threads/{thread_id}/messages"),
        json!({"text": "hi"}),
    );
    let (id, _) = runner.next_request().await;

    h.begin_stop();
    // Draining shows on the replica's own readiness.
    let deadline = std::time::Instant::now() + support::GUARD;
    loop {
        let (status, ready) = h.get("/readyz").await;
        if status == 503 {
            assert_eq!(ready["draining"], true, "{ready}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never draining");
        tokio::task::yield_now().await;
    }
    let refused = FakeRunner::try_connect(h.grpc, &token, offering("gantry", &["m1"]))
        .await
        .err()
        .expect("a draining replica took a new runner");
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");

    // The request in flight is still answered, then the channel closes.
    runner
        .send(Some(&id), turn_update("turn-1", TurnStatus::Running))
        .await;
    let (status, accepted) = answer(call).await;
    assert_eq!(status, 202, "{accepted}");
    assert_eq!(accepted["turn_id"], "turn-1");
    assert!(runner.closed().await);
    h.stop().await;
}

/// Readiness asks the store in use: on PostgreSQL, a database that is
/// gone makes the replica unready, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_asks_the_postgres_store_in_use() {
    let Some(at) = StoreAt::new(Backend::Postgres).await else {
        return;
    };
    let h = Harness::start_at(&at, TIMEOUT).await;
    let (status, ready) = h.get("/readyz").await;
    assert_eq!((status, &ready["store"]), (200, &json!("ok")), "{ready}");

    let url = at.postgres_url().unwrap();
    let (server, name) = url.rsplit_once('/').unwrap();
    let admin = sqlx::PgPool::connect(&format!("{server}/postgres"))
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE {name} WITH (FORCE)"
    )))
    .execute(&mut *admin.acquire().await.unwrap())
    .await
    .unwrap();
    admin.close().await;
    let (status, ready) = guarded("readiness", h.get("/readyz")).await;
    assert_eq!(status, 503, "{ready}");
    assert_eq!(ready["status"], "not ready");
    assert!(ready["store"].as_str().unwrap().contains("ping"), "{ready}");
    assert_eq!(text(&h, "/healthz").await.0, 200, "alive all the same");
    h.stop().await;
}

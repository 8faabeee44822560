//! `GET /v1/events`: every thread's updates in commit order, on both
//! backends. Headers come at once; `Last-Event-ID` resumes after a cursor
//! with exactly what was missed (of every thread), then live updates; a
//! cursor that is not one is 400 in the API's error shape.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use serde_json::{Value, json};
use support::{Harness, StoreAt, guarded, on_both_backends, runner_with_thread};

const TIMEOUT: Duration = Duration::from_secs(10);

on_both_backends!(
    every_threads_updates_come_in_commit_order_and_resume_with_nothing_missed_or_twice
);

/// One event's data.
fn data(event: &eventsource_stream::Event) -> Value {
    serde_json::from_str(&event.data).unwrap()
}

/// Events until the `turn` update of `turn` (inclusive).
async fn until_turn(
    events: &mut (impl Stream<Item = eventsource_stream::Event> + Unpin),
    turn: &str,
) -> Vec<eventsource_stream::Event> {
    let mut seen = Vec::new();
    loop {
        let event = guarded("an SSE event", events.next())
            .await
            .expect("the stream ended early");
        let done = event.event == "turn" && data(&event)["data"]["id"] == turn;
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// Sends a message to `thread` (the runner completes a turn at once); the
/// turn's id.
async fn message(h: &Harness, thread: &str) -> String {
    let (status, accepted) = h
        .post(
            &format!("/v1/threads/{thread}/messages"),
            json!({"text": "go"}),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    accepted["turn_id"].as_str().unwrap().to_owned()
}

/// A cursor as the test compares them (it is opaque to clients).
fn order(cursor: &str) -> (i64, i64) {
    match cursor.split_once('.') {
        Some((tx, position)) => (tx.parse().unwrap(), position.parse().unwrap()),
        None => (0, cursor.parse().unwrap()),
    }
}

async fn every_threads_updates_come_in_commit_order_and_resume_with_nothing_missed_or_twice(
    at: StoreAt,
) {
    let h = Harness::start_at(&at, TIMEOUT).await;
    let (runner, agent, one) = runner_with_thread(&h, "r1").await;
    let _answering = runner.answer_everything();
    let (status, created) = h
        .post(&format!("/v1/agents/{agent}/threads"), json!({}))
        .await;
    assert_eq!(status, 201, "{created}");
    let two = created["id"].as_str().unwrap().to_owned();

    // Opened before anything happens: its headers came at once.
    let mut first = h.follow_all(None).await;
    let turn_a = message(&h, &one).await;
    let mut seen = until_turn(&mut first, &turn_a).await;
    let turn_b = message(&h, &two).await;
    seen.extend(until_turn(&mut first, &turn_b).await);
    drop(first);

    // Missed while away, on both threads; then one live.
    let missed = [message(&h, &one).await, message(&h, &two).await];
    let last = seen.last().unwrap().id.clone();
    let mut resumed = h.follow_all(Some(&last)).await;
    let live = message(&h, &one).await;
    let again = until_turn(&mut resumed, &live).await;
    for turn in &missed {
        assert!(
            again.iter().any(|e| data(e)["data"]["id"] == turn.as_str()),
            "the turn {turn} missed while away is replayed"
        );
    }

    // In commit order, each id its cursor, each thread's seqs dense from
    // the first seen: nothing missed, nothing twice, across the reconnect.
    let all: Vec<_> = seen.iter().chain(&again).collect();
    let cursors: Vec<_> = all.iter().map(|e| order(&e.id)).collect();
    assert!(cursors.windows(2).all(|w| w[0] < w[1]), "{cursors:?}");
    let mut seqs: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for event in &all {
        let body = data(event);
        assert_eq!(body["cursor"], event.id.as_str());
        assert_eq!(body["kind"], event.event.as_str());
        let thread = body["thread_id"].as_str().unwrap().to_owned();
        seqs.entry(thread)
            .or_default()
            .push(body["seq"].as_i64().unwrap());
    }
    let mut threads = vec![one.clone(), two.clone()];
    threads.sort();
    assert_eq!(seqs.keys().cloned().collect::<Vec<_>>(), threads);
    for (thread, seqs) in &seqs {
        let dense: Vec<i64> = (seqs[0]..seqs[0] + seqs.len() as i64).collect();
        assert_eq!(seqs, &dense, "thread {thread}");
    }

    // Resuming after the very start replays both threads' whole logs.
    let mut replay = h.follow_all(Some("0")).await;
    let from_start = until_turn(&mut replay, &live).await;
    for (thread, seqs) in &seqs {
        let of_thread: Vec<i64> = from_start
            .iter()
            .map(data)
            .filter(|d| d["thread_id"] == thread.as_str())
            .map(|d| d["seq"].as_i64().unwrap())
            .collect();
        assert_eq!(of_thread, (1..=*seqs.last().unwrap()).collect::<Vec<_>>());
    }
    drop(replay);
    drop(resumed);

    let request = h
        .client
        .get(h.url("/v1/events"))
        .header("last-event-id", "yesterday");
    let response = request.send().await.unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "bad_request", "{body}");
    let (status, body) = h.get("/v1/events?after=1&limit=2").await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"].as_str().unwrap().contains("limit"),
        "{body}"
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runners_and_agents_changing_is_said_with_no_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let mut events = h.follow_all(None).await;

    // A runner connects: a hint, no id (resuming is unchanged).
    let (_, token) = h.add_runner("r1").await;
    let runner =
        support::FakeRunner::connect(h.grpc, &token, support::offering("gantry", &["m1"])).await;
    let hint = guarded("an SSE event", events.next()).await.unwrap();
    assert_eq!((hint.event.as_str(), hint.id.as_str()), ("runners", ""));
    let (_, runners) = h.get("/v1/runners").await;
    assert_eq!(runners[0]["connected"], true, "{runners}");

    // An agent is made: the same hint, once it is listed.
    let _answering = runner.answer_everything();
    let (status, agent) = h.post("/v1/agents", json!({})).await;
    assert_eq!(status, 201, "{agent}");
    loop {
        let event = guarded("an SSE event", events.next()).await.unwrap();
        if event.event == "runners" {
            assert_eq!(event.id, "");
            break;
        }
    }
    let (_, agents) = h.get("/v1/agents").await;
    assert_eq!(agents[0]["id"], agent["id"], "{agents}");
    drop(events);
    h.stop().await;
}

//! How a turn ends, as a runner of 0.7.0 that behaves as CompanyHelm's
//! says it: interrupted (the runner answers the interrupt only with the
//! turn's completed update and never ends the cut message), failed (an
//! error answering the message, no completed update), or completed with an
//! item left open. Every item of a turn ends when the turn does, and the
//! turn says how it ended: in the API and on the thread's SSE.

use crate::support;

use std::time::Duration;

use futures_util::{Stream, StreamExt};
use gantry_runner_protocol::v0_7 as pb7;
use gantry_runner_protocol::v0_7::client_message::Payload;
use gantry_runner_protocol::v0_7::server_message::Request;
use serde_json::{Value, json};
use support::runner_v0_7::{TURN, start_turn, thread_on_a_0_7_runner, turn7};
use support::{Harness, guarded};

const TIMEOUT: Duration = Duration::from_secs(10);

/// The thread's SSE updates as (kind, item type, status), until its turn
/// ends `as_`.
async fn until_turn(
    events: &mut (impl Stream<Item = eventsource_stream::Event> + Unpin),
    as_: &str,
) -> Vec<(String, String, String)> {
    let mut seen = Vec::new();
    loop {
        let event = guarded("the thread's next update", events.next())
            .await
            .expect("the stream ended");
        let update: Value = serde_json::from_str(&event.data).unwrap();
        let data = &update["data"];
        let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
        seen.push((
            text(&update["kind"]),
            text(&data["type"]),
            text(&data["status"]),
        ));
        if update["kind"] == "turn" && data["status"] == as_ {
            return seen;
        }
    }
}

fn line(kind: &str, item_type: &str, status: &str) -> (String, String, String) {
    (kind.into(), item_type.into(), status.into())
}

/// The thread's one turn and its items' (type, status).
async fn turn_of(h: &Harness, thread: &str) -> (String, Vec<(String, String)>) {
    let (status, detail) = h.get(&format!("/v1/threads/{thread}")).await;
    assert_eq!(status, 200, "{detail}");
    let turn = &detail["turns"][0];
    let items = turn["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["type"].as_str().unwrap().into(),
                i["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    (turn["status"].as_str().unwrap().to_owned(), items)
}

#[tokio::test]
async fn an_interrupted_turn_says_so_and_its_cut_message_ends_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (mut runner, thread) = thread_on_a_0_7_runner(&h).await;
    let message = start_turn(&h, &mut runner, &thread).await;
    let mut events = h.follow(&thread, None).await;

    let (status, sent) = h
        .post(&format!("/v1/threads/{thread}/interrupt"), json!({}))
        .await;
    assert_eq!(status, 202, "{sent}");
    // Until the runner says the turn ended, it is being interrupted.
    assert_eq!(turn_of(&h, &thread).await.0, "interrupting");
    let (_, request) = runner.next_request().await;
    assert!(
        matches!(request, Request::InterruptTurnRequest(_)),
        "{request:?}"
    );
    // CompanyHelm's runner: the thread's name, then the turn completed
    // under the message's request id; the agent's message never ends.
    let name = Payload::ThreadNameUpdate(pb7::ThreadNameUpdate {
        thread_id: thread.clone(),
        thread_name: Some("go".into()),
    });
    runner.send(None, name).await;
    runner
        .send(
            Some(&message),
            turn7(&thread, TURN, pb7::TurnStatus::Completed),
        )
        .await;

    let seen = until_turn(&mut events, "interrupted").await;
    let ending = &seen[seen.len() - 3..];
    assert_eq!(
        ending,
        [
            line("thread", "", "ready"),
            line("item", "agent_message", "interrupted"),
            line("turn", "", "interrupted"),
        ],
        "{seen:?}"
    );
    assert!(seen.contains(&line("turn", "", "interrupting")), "{seen:?}");
    let (status, items) = turn_of(&h, &thread).await;
    assert_eq!(status, "interrupted");
    assert_eq!(
        items,
        [
            ("user_message".to_owned(), "completed".to_owned()),
            ("agent_message".to_owned(), "interrupted".to_owned()),
        ]
    );
    // Nothing is left running on the runner's account.
    let (_, runners) = h.get("/v1/runners").await;
    assert_eq!(runners[0]["running_turns"], 0);
    h.stop().await;
}

#[tokio::test]
async fn a_turn_whose_message_the_runner_answers_with_an_error_failed() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (mut runner, thread) = thread_on_a_0_7_runner(&h).await;
    let message = start_turn(&h, &mut runner, &thread).await;
    let mut events = h.follow(&thread, None).await;

    // CompanyHelm's runner when codex reports an error: a RequestError
    // echoing the message, and no completed turn.
    let failed = Payload::RequestError(pb7::RequestError {
        error_message: "stream disconnected before completion".into(),
    });
    runner.send(Some(&message), failed).await;

    let seen = until_turn(&mut events, "failed").await;
    assert_eq!(
        &seen[seen.len() - 3..],
        [
            line("error", "", ""),
            line("item", "agent_message", "failed"),
            line("turn", "", "failed"),
        ],
        "{seen:?}"
    );
    assert_eq!(turn_of(&h, &thread).await.0, "failed");
    // A late completed update changes nothing (the name after it says it
    // was read), nor does an interrupt of the thread.
    runner
        .send(
            Some(&message),
            turn7(&thread, TURN, pb7::TurnStatus::Completed),
        )
        .await;
    let name = Payload::ThreadNameUpdate(pb7::ThreadNameUpdate {
        thread_id: thread.clone(),
        thread_name: Some("later".into()),
    });
    runner.send(None, name).await;
    until_named(&mut events).await;
    let (status, sent) = h
        .post(&format!("/v1/threads/{thread}/interrupt"), json!({}))
        .await;
    assert_eq!(status, 202, "{sent}");
    assert_eq!(turn_of(&h, &thread).await.0, "failed");
    h.stop().await;
}

/// Waits for the thread's next update naming it.
async fn until_named(events: &mut (impl Stream<Item = eventsource_stream::Event> + Unpin)) {
    loop {
        let event = guarded("the thread's name", events.next())
            .await
            .expect("the stream ended");
        let update: Value = serde_json::from_str(&event.data).unwrap();
        if update["kind"] == "thread" && update["data"]["name"].is_string() {
            return;
        }
    }
}

#[tokio::test]
async fn a_turn_that_completes_ends_the_items_its_runner_left_open() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (mut runner, thread) = thread_on_a_0_7_runner(&h).await;
    let message = start_turn(&h, &mut runner, &thread).await;
    let mut events = h.follow(&thread, None).await;

    runner
        .send(
            Some(&message),
            turn7(&thread, TURN, pb7::TurnStatus::Completed),
        )
        .await;

    let seen = until_turn(&mut events, "completed").await;
    assert_eq!(
        &seen[seen.len() - 2..],
        [
            line("item", "agent_message", "completed"),
            line("turn", "", "completed"),
        ],
        "{seen:?}"
    );
    let (status, items) = turn_of(&h, &thread).await;
    assert_eq!(status, "completed");
    assert!(items.iter().all(|(_, s)| s == "completed"), "{items:?}");
    h.stop().await;
}

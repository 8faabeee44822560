//! Messages and what follows them: turns and items tracked from the
//! runner's updates, shown by `GET /v1/threads/{id}`, and streamed over SSE
//! in order, with `Last-Event-ID` resume.

use crate::support;

use std::time::Duration;

use gantry_runner_protocol::v0_2::server_message::Request as RunnerRequest;
use gantry_runner_protocol::v0_2::{self as pb, ItemStatus, ItemType, TurnStatus};
use serde_json::{Value, json};
use support::{
    FakeRunner, Harness, answer, item_update, request_error, runner_with_thread, take_events,
    turn_update,
};

const TIMEOUT: Duration = Duration::from_secs(10);

/// Sends a message and plays a whole turn on the runner: turn running,
/// user message, reasoning, a command, the answer, turn completed.
async fn play_turn(h: &Harness, runner: &mut FakeRunner, thread_id: &str, turn: &str) -> Value {
    let call = h.post_later(
        &format!("/v1/threads/{thread_id}/messages"),
        json!({"text": "list the files"}),
    );
    let (id, request) = runner.next_request().await;
    let RunnerRequest::CreateUserMessageRequest(message) = request else {
        panic!("{request:?}");
    };
    assert_eq!(message.thread_id, thread_id);
    assert_eq!(message.text, "list the files");
    assert!(!message.allow_steer);
    let id = Some(id.as_str());
    runner
        .send(id, turn_update(turn, TurnStatus::Running))
        .await;
    let (status, accepted) = answer(call).await;
    assert_eq!(status, 202, "{accepted}");
    assert_eq!(accepted["turn_id"], turn);
    assert_eq!(accepted["steered"], false);

    let user = format!("{turn}-user");
    let reasoning = format!("{turn}-reasoning");
    let command = format!("{turn}-command");
    let reply = format!("{turn}-reply");
    runner
        .send(
            id,
            item_update(
                &user,
                ItemType::UserMessage,
                ItemStatus::Completed,
                "list the files",
            ),
        )
        .await;
    runner
        .send(
            id,
            item_update(&reasoning, ItemType::Reasoning, ItemStatus::Running, "Look"),
        )
        .await;
    runner
        .send(
            id,
            item_update(
                &reasoning,
                ItemType::Reasoning,
                ItemStatus::Completed,
                "Look at the dir.",
            ),
        )
        .await;
    runner
        .send(
            id,
            pb::client_message::Payload::ItemUpdate(pb::ItemUpdate {
                sdk_item_id: command.clone(),
                status: ItemStatus::Completed.into(),
                item_type: ItemType::CommandExecution.into(),
                text: None,
                command_execution_item: Some(pb::CommandExecutionItem {
                    command: "ls".into(),
                    cwd: "/work".into(),
                    process_id: "42".into(),
                    output: Some("a.txt\n".into()),
                }),
            }),
        )
        .await;
    runner
        .send(
            id,
            item_update(
                &reply,
                ItemType::AgentMessage,
                ItemStatus::Completed,
                "One file: a.txt.",
            ),
        )
        .await;
    runner
        .send(id, turn_update(turn, TurnStatus::Completed))
        .await;
    accepted
}

/// The (event name, JSON data) of SSE events.
fn parsed(events: &[eventsource_stream::Event]) -> Vec<(String, Value)> {
    events
        .iter()
        .map(|e| (e.event.clone(), serde_json::from_str(&e.data).unwrap()))
        .collect()
}

#[tokio::test]
async fn a_turn_is_tracked_and_streamed_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (mut runner, _, thread_id) = runner_with_thread(&h, "r1").await;
    let mut events = h.follow(&thread_id, None).await;

    play_turn(&h, &mut runner, &thread_id, "turn-1").await;

    // Thread ready, turn running, 5 item updates, turn completed.
    let got = take_events(&mut events, 8).await;
    let ids: Vec<&str> = got.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5", "6", "7", "8"]);
    let got = parsed(&got);
    let kinds: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "thread", "turn", "item", "item", "item", "item", "item", "turn"
        ]
    );
    let (_, first) = &got[0];
    assert_eq!(first["seq"], 1);
    assert_eq!(first["kind"], "thread");
    assert_eq!(first["data"]["id"], thread_id.as_str());
    assert_eq!(got[3].1["data"]["text"], "Look");
    assert_eq!(got[4].1["data"]["text"], "Look at the dir.");
    assert_eq!(got[7].1["data"]["status"], "completed");

    let (status, thread) = h.get(&format!("/v1/threads/{thread_id}")).await;
    assert_eq!(status, 200);
    let turn = &thread["turns"][0];
    assert_eq!(turn["id"], "turn-1");
    assert_eq!(turn["status"], "completed");
    let items = turn["items"].as_array().unwrap();
    let types: Vec<&str> = items.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "user_message",
            "reasoning",
            "command_execution",
            "agent_message"
        ]
    );
    assert!(items.iter().all(|i| i["status"] == "completed"));
    assert_eq!(items[1]["text"], "Look at the dir.");
    assert_eq!(items[2]["command"]["output"], "a.txt\n");
    assert_eq!(items[3]["text"], "One file: a.txt.");
    h.stop().await;
}

#[tokio::test]
async fn last_event_id_resumes_with_exactly_the_missing_updates_then_live_ones() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (mut runner, _, thread_id) = runner_with_thread(&h, "r1").await;
    let mut first = h.follow(&thread_id, None).await;
    play_turn(&h, &mut runner, &thread_id, "turn-1").await;
    let seen = take_events(&mut first, 4).await;
    assert_eq!(seen[3].id, "4");
    drop(first);

    let mut resumed = h.follow(&thread_id, Some(4)).await;
    let missed = take_events(&mut resumed, 4).await;
    let ids: Vec<&str> = missed.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["5", "6", "7", "8"]);

    // Then live, continuing the same sequence.
    play_turn(&h, &mut runner, &thread_id, "turn-2").await;
    let live = take_events(&mut resumed, 7).await;
    let ids: Vec<&str> = live.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["9", "10", "11", "12", "13", "14", "15"]);
    assert_eq!(parsed(&live)[0].1["data"]["id"], "turn-2");

    let refused = h
        .client
        .get(h.url(&format!("/v1/threads/{thread_id}/events")))
        .header("last-event-id", "not-a-seq")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 400);
    h.stop().await;
}

#[tokio::test]
async fn a_steer_joins_the_running_turn_and_a_refusal_is_409() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (mut runner, _, thread_id) = runner_with_thread(&h, "r1").await;
    let messages = format!("/v1/threads/{thread_id}/messages");

    let call = h.post_later(&messages, json!({"text": "start"}));
    let (first, _) = runner.next_request().await;
    runner
        .send(Some(&first), turn_update("turn-1", TurnStatus::Running))
        .await;
    assert_eq!(answer(call).await.0, 202);

    // Not allowed to steer: the runner refuses.
    let call = h.post_later(&messages, json!({"text": "also this"}));
    let (id, _) = runner.next_request().await;
    runner
        .send(
            Some(&id),
            request_error("a turn is running; steering not allowed"),
        )
        .await;
    let (status, body) = answer(call).await;
    assert_eq!(status, 409);
    assert_eq!(
        body["error"]["message"],
        "a turn is running; steering not allowed"
    );

    // Allowed: the runner reports the running turn and the steer's message.
    let call = h.post_later(&messages, json!({"text": "also this", "allow_steer": true}));
    let (steer, request) = runner.next_request().await;
    assert!(matches!(request, RunnerRequest::CreateUserMessageRequest(ref m) if m.allow_steer));
    runner
        .send(Some(&steer), turn_update("turn-1", TurnStatus::Running))
        .await;
    let (status, accepted) = answer(call).await;
    assert_eq!(status, 202);
    assert_eq!(accepted["turn_id"], "turn-1");
    assert_eq!(accepted["steered"], true);
    runner
        .send(
            Some(&steer),
            item_update(
                "steer-msg",
                ItemType::UserMessage,
                ItemStatus::Completed,
                "also this",
            ),
        )
        .await;
    // The rest of the turn echoes the original request.
    runner
        .send(Some(&first), turn_update("turn-1", TurnStatus::Completed))
        .await;

    let mut events = h.follow(&thread_id, None).await;
    let got = parsed(&take_events(&mut events, 5).await);
    let kinds: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["thread", "turn", "error", "item", "turn"]);
    assert_eq!(
        got[2].1["data"]["error"],
        "a turn is running; steering not allowed"
    );

    let (_, thread) = h.get(&format!("/v1/threads/{thread_id}")).await;
    let turns = thread["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0]["status"], "completed");
    assert_eq!(turns[0]["items"][0]["text"], "also this");
    h.stop().await;
}

#[tokio::test]
async fn replayed_updates_change_nothing_and_status_never_goes_back() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (mut runner, _, thread_id) = runner_with_thread(&h, "r1").await;
    let accepted = play_turn(&h, &mut runner, &thread_id, "turn-1").await;
    let request_id = accepted["request_id"].as_str().unwrap().to_owned();
    let id = Some(request_id.as_str());

    // A runner re-sending after a reconnect: old states and repeats.
    runner
        .send(id, turn_update("turn-1", TurnStatus::Running))
        .await;
    runner
        .send(
            id,
            item_update(
                "turn-1-reasoning",
                ItemType::Reasoning,
                ItemStatus::Running,
                "Lo",
            ),
        )
        .await;
    runner
        .send(
            id,
            item_update(
                "turn-1-reply",
                ItemType::AgentMessage,
                ItemStatus::Completed,
                "One file: a.txt.",
            ),
        )
        .await;
    // A marker after them: once it is seen, the replays were processed.
    runner
        .send(
            id,
            item_update(
                "marker",
                ItemType::AgentMessage,
                ItemStatus::Completed,
                "end",
            ),
        )
        .await;

    let mut events = h.follow(&thread_id, None).await;
    let got = take_events(&mut events, 9).await;
    assert_eq!(got[8].id, "9");
    assert_eq!(parsed(&got)[8].1["data"]["id"], "marker");

    let (_, thread) = h.get(&format!("/v1/threads/{thread_id}")).await;
    let turn = &thread["turns"][0];
    assert_eq!(turn["status"], "completed");
    assert_eq!(turn["items"][1]["text"], "Look at the dir.");
    assert_eq!(turn["items"][1]["status"], "completed");
    assert_eq!(turn["items"].as_array().unwrap().len(), 5);
    h.stop().await;
}

#[tokio::test]
async fn updates_that_cannot_be_attributed_are_ignored_and_bad_ones_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), TIMEOUT).await;
    let (mut runner, _, thread_id) = runner_with_thread(&h, "r1").await;

    runner
        .send(None, turn_update("ghost", TurnStatus::Running))
        .await;
    runner
        .send(
            Some("no-such-request"),
            item_update(
                "ghost-item",
                ItemType::AgentMessage,
                ItemStatus::Completed,
                "?",
            ),
        )
        .await;
    // Invalid: empty item id.
    runner
        .send(
            None,
            item_update("", ItemType::AgentMessage, ItemStatus::Completed, "?"),
        )
        .await;
    play_turn(&h, &mut runner, &thread_id, "turn-1").await;

    let mut events = h.follow(&thread_id, None).await;
    let got = take_events(&mut events, 2).await;
    // Straight from the thread to the real turn: nothing ghostly between.
    assert_eq!(parsed(&got)[1].1["data"]["id"], "turn-1");
    h.stop().await;
}

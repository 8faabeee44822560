//! Steering, queueing and interrupting a running turn.

use crate::common;

use common::*;
use gantry_core::{EngineError, IfBusy, Notification, STEER_CAPACITY};
use gantry_testkit::Step;
use gantry_types::{DeltaKind, EventPayload, ItemKind, ItemStatus, TurnStatus};
use serde_json::json;

/// A shell step that prints `ready` and then blocks until the test writes the fifo.
fn blocked_shell(fifo: &std::path::Path) -> Step {
    Step::tool_call(
        "shell",
        json!({"command": format!("echo ready; cat {}", fifo.display())}),
    )
}

fn make_fifo(path: &std::path::Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
}

async fn wait_ready(sub: &mut gantry_core::Subscription) {
    wait_for(sub, |n| matches!(n, Notification::Delta(d) if matches!(&d.kind, DeltaKind::CommandOutput(t) if t.contains("ready"))))
        .await;
}

#[tokio::test]
async fn steer_reaches_the_model_before_its_next_request() {
    // Outside the temp dir: sandboxed commands see a private /tmp.
    let dir = gantry_testkit::process::dir_outside_temp().unwrap();
    let fifo = dir.path().join("gate");
    make_fifo(&fifo);
    let h = Harness::new(vec![blocked_shell(&fifo), Step::text("steered answer")]).await;
    let (mut sub, turn) = h.start_turn("start").await;
    wait_ready(&mut sub).await;

    let steered = h
        .engine
        .turns()
        .steer(&h.thread.id, "also mention cats")
        .await
        .unwrap();
    assert_eq!(steered, turn, "a steer joins the running turn");
    // A plain send while busy is refused with a helpful error.
    let busy = h
        .engine
        .turns()
        .send(&h.thread.id, "hello?", IfBusy::Reject)
        .await;
    assert!(matches!(busy, Err(EngineError::Busy { .. })), "{busy:?}");

    std::fs::write(&fifo, "go\n").unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);

    let messages = h.llm.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"], "also mention cats");
    let view = h.view().await;
    let users: Vec<_> = view.turns[0]
        .items
        .iter()
        .filter(|i| matches!(i.kind, ItemKind::UserMessage { .. }))
        .collect();
    assert_eq!(users.len(), 2, "the steer is an item of the turn");
    assert_eq!(view.turns.len(), 1);
}

#[tokio::test]
async fn steering_past_the_capacity_is_refused_clearly_and_every_earlier_steer_arrives() {
    // Outside the temp dir: sandboxed commands see a private /tmp.
    let dir = gantry_testkit::process::dir_outside_temp().unwrap();
    let fifo = dir.path().join("gate");
    make_fifo(&fifo);
    let h = Harness::new(vec![blocked_shell(&fifo), Step::text("steered answer")]).await;
    let (mut sub, turn) = h.start_turn("start").await;
    wait_ready(&mut sub).await;

    // The turn takes steers after its command: until then they wait.
    let steers: Vec<String> = (0..STEER_CAPACITY).map(|i| format!("steer {i}")).collect();
    for steer in &steers {
        let steered = h
            .engine
            .turns()
            .steer(&h.thread.id, steer.as_str())
            .await
            .unwrap();
        assert_eq!(steered, turn);
    }
    let err = h
        .engine
        .turns()
        .steer(&h.thread.id, "one too many")
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::NotSteerable { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains(&format!("{STEER_CAPACITY} steering inputs waiting"))
            && message.contains("try again"),
        "{message}"
    );
    // A message sent to steer if busy gets the same answer.
    let busy = h
        .engine
        .turns()
        .send(&h.thread.id, "one too many", IfBusy::Steer)
        .await;
    assert!(
        matches!(&busy, Err(EngineError::NotSteerable { .. })),
        "{busy:?}"
    );

    std::fs::write(&fifo, "go\n").unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);

    // The model's next request has every steer, in order, and no other.
    let messages = h.llm.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let users: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    let mut expected = vec!["start"];
    expected.extend(steers.iter().map(String::as_str));
    assert_eq!(users, expected);
    // Each is an item of the turn, in order.
    let view = h.view().await;
    let items: Vec<&str> = view.turns[0]
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::UserMessage { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(items, expected);
}

#[tokio::test]
async fn steer_without_a_running_turn_is_refused() {
    let h = Harness::new(vec![]).await;
    let err = h
        .engine
        .turns()
        .steer(&h.thread.id, "hi")
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::NotSteerable { .. }));
    assert!(err.to_string().contains("no turn is running"), "{err}");
}

#[tokio::test]
async fn queued_message_runs_after_the_current_turn() {
    // Outside the temp dir: sandboxed commands see a private /tmp.
    let dir = gantry_testkit::process::dir_outside_temp().unwrap();
    let fifo = dir.path().join("gate");
    make_fifo(&fifo);
    let h = Harness::new(vec![
        blocked_shell(&fifo),
        Step::text("first done"),
        Step::text("second done"),
    ])
    .await;
    let (mut sub, first) = h.start_turn("first").await;
    wait_ready(&mut sub).await;
    let second = h
        .engine
        .turns()
        .queue(&h.thread.id, "second")
        .await
        .unwrap();
    assert_ne!(first, second);
    assert_eq!(h.view().await.queued.len(), 1, "visible while it waits");

    std::fs::write(&fifo, "go\n").unwrap();
    until_turn_ends(&mut sub, &first).await;
    let seen = until_turn_ends(&mut sub, &second).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let view = h.view().await;
    assert!(view.queued.is_empty());
    assert_eq!(view.turns.len(), 2);
    assert_eq!(view.turns[1].turn.input, "second");
}

#[tokio::test]
async fn interrupt_kills_the_process_group_and_ends_the_turn() {
    let h = Harness::new(vec![
        Step::tool_call(
            "shell",
            json!({"command": "sleep 60 & echo ready; sleep 60"}),
        ),
        Step::text("never sent"),
    ])
    .await;
    let (mut sub, turn) = h.start_turn("wait a minute").await;
    wait_ready(&mut sub).await;

    let interrupted = h.engine.turns().interrupt(&h.thread.id).await.unwrap();
    assert_eq!(interrupted, Some(turn.clone()));
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Interrupted);

    let command = events(&seen)
        .iter()
        .find_map(|e| match &e.payload {
            EventPayload::ItemCompleted { item }
                if matches!(item.kind, ItemKind::CommandExecution { .. }) =>
            {
                Some(item.clone())
            }
            _ => None,
        })
        .expect("command item completed");
    assert_eq!(command.status, ItemStatus::Interrupted);
    let ItemKind::CommandExecution {
        process_id: Some(pgid),
        ..
    } = command.kind
    else {
        panic!("command has a process id: {command:?}");
    };
    // The whole group (bash and both sleeps) is gone.
    let alive = gantry_testkit::process::live_group_members(pgid);
    assert!(alive.is_empty(), "process group {pgid} still has {alive:?}");
    assert_eq!(
        h.llm.request_count(),
        1,
        "no model request after the interrupt"
    );

    // The thread takes new input afterwards.
    assert_eq!(
        h.engine.turns().interrupt(&h.thread.id).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn interrupt_cancels_a_streaming_model_answer() {
    let h = Harness::new(vec![
        Step::text("a b c d e f g h i j k l m n o p")
            .with_chunk_size(2)
            .with_delay_ms(200),
    ])
    .await;
    let (mut sub, turn) = h.start_turn("talk slowly").await;
    wait_for(
        &mut sub,
        |n| matches!(n, Notification::Delta(d) if matches!(d.kind, DeltaKind::AgentText(_))),
    )
    .await;
    h.engine.turns().interrupt(&h.thread.id).await.unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Interrupted);
    let view = h.view().await;
    let agent = view.turns[0]
        .items
        .iter()
        .find(|i| matches!(i.kind, ItemKind::AgentMessage { .. }))
        .expect("partial answer kept");
    assert_eq!(agent.status, ItemStatus::Interrupted);
    let ItemKind::AgentMessage { text } = &agent.kind else {
        unreachable!()
    };
    assert!(
        text.starts_with("a "),
        "what streamed before the interrupt is kept: {text:?}"
    );
}

#[tokio::test]
async fn a_message_sent_twice_with_one_key_runs_once() {
    // Outside the temp dir: sandboxed commands see a private /tmp.
    let dir = gantry_testkit::process::dir_outside_temp().unwrap();
    let fifo = dir.path().join("gate");
    make_fifo(&fifo);
    let h = Harness::new(vec![
        blocked_shell(&fifo),
        Step::text("done"),
        Step::text("second"),
    ])
    .await;
    let thread = &h.thread.id;
    let mut sub = h.engine.feeds().subscribe(thread, 1).await.unwrap();
    let first = h
        .engine
        .turns()
        .send_once(thread, "req-1", "build it", IfBusy::Reject)
        .await
        .unwrap();
    assert!(first.first_time && !first.steered);
    wait_ready(&mut sub).await;

    // The same request again, while its turn runs: nothing new happens.
    let again = h
        .engine
        .turns()
        .send_once(thread, "req-1", "build it", IfBusy::Reject)
        .await
        .unwrap();
    assert_eq!(
        (again.turn.clone(), again.first_time),
        (first.turn.clone(), false)
    );
    // A steer keyed once, sent twice, joins the turn once.
    let steer = h
        .engine
        .turns()
        .send_once(thread, "req-2", "and test it", IfBusy::Steer)
        .await
        .unwrap();
    assert!(steer.steered && steer.first_time);
    let steer_again = h
        .engine
        .turns()
        .send_once(thread, "req-2", "and test it", IfBusy::Steer)
        .await
        .unwrap();
    assert_eq!(
        (steer_again.turn, steer_again.first_time),
        (first.turn.clone(), false)
    );

    std::fs::write(&fifo, "go\n").unwrap();
    until_turn_ends(&mut sub, &first.turn).await;
    // After the turn, and after a restart, the keys are still known.
    h.engine.shutdown().await.expect("events stored");
    let engine = engine_at(h.dir.path(), &h.llm, gantry_core::EngineConfig::default()).await;
    let after = engine
        .turns()
        .send_once(thread, "req-2", "and test it", IfBusy::Reject)
        .await
        .unwrap();
    assert_eq!((after.turn, after.first_time), (first.turn.clone(), false));
    let view = engine.threads().read(thread).await.unwrap();
    assert_eq!(view.turns.len(), 1, "no second turn");
    assert_eq!(view.turns[0].turn.key.as_deref(), Some("req-1"));
    let users: Vec<_> = view.turns[0]
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::UserMessage { text, key, .. } => Some((text.as_str(), key.as_deref())),
            _ => None,
        })
        .collect();
    assert_eq!(
        users,
        [("build it", Some("req-1")), ("and test it", Some("req-2"))]
    );
    assert_eq!(
        h.llm.requests().len(),
        2,
        "the model ran one turn of two rounds"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_is_idle_as_soon_as_its_turn_completed_event_is_seen() {
    // A client that acts on `turn_completed` (sends the next message,
    // archives) must never find the thread still busy with that turn.
    const TURNS: usize = 20;
    let h = Harness::new(
        (0..TURNS)
            .map(|i| Step::text(format!("answer {i}")))
            .collect(),
    )
    .await;
    let mut sub = h.engine.feeds().subscribe(&h.thread.id, 1).await.unwrap();
    for i in 0..TURNS {
        let sent = h
            .engine
            .turns()
            .send(&h.thread.id, &format!("question {i}"), IfBusy::Reject)
            .await;
        let turn = match sent {
            Ok(turn) => turn,
            Err(e) => panic!("turn {i}: the thread was still busy after turn_completed: {e}"),
        };
        let seen = until_turn_ends(&mut sub, &turn).await;
        assert_eq!(turn_status(&seen), TurnStatus::Completed);
    }
    h.engine
        .threads()
        .archive(&h.thread.id)
        .await
        .expect("archived right after the last turn_completed");
}

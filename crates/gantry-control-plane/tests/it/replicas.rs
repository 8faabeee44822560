//! Two replicas over one store (SQLite file, PostgreSQL database: each case
//! runs on both) and a real NATS server with JetStream
//! (`GANTRY_TEST_NATS`, default `nats://127.0.0.1:4222`): a request on one
//! reaches the runner held by the other and its errors read the same; the
//! thread's events on either replica carry every update in order; when the
//! holding replica stops, its runner is offline elsewhere until it
//! connects again, and a follower resumes with no gap and no duplicate;
//! when it dies without a goodbye, a request for its runner is refused at
//! once.

use crate::e2e_v0_7::{Runner07, wait_connected};
use crate::support;

use std::time::Duration;

use futures_util::StreamExt;
use gantry_control_plane::{Cluster, ControlPlane, ControlPlaneOptions};
use gantry_runner_protocol::v0_2::server_message::Request as RunnerRequest;
use gantry_runner_protocol::v0_2::{self as pb, ItemStatus, ItemType, TurnStatus};
use serde_json::{Value, json};
use support::{
    FakeRunner, Harness, StoreAt, agent_update, answer, guarded, item_update, offering,
    request_error, take_events, thread_update, turn_update,
};

const TIMEOUT: Duration = Duration::from_secs(10);

/// The NATS server of the tests; `None` (the test skips) when it is
/// unreachable and `GANTRY_TEST_NO_NATS=1` outside CI.
pub(crate) fn nats_url() -> Option<String> {
    let url =
        std::env::var("GANTRY_TEST_NATS").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned());
    let addr = url.trim_start_matches("nats://").to_owned();
    if std::net::TcpStream::connect(&addr).is_ok() {
        return Some(url);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !ci && std::env::var("GANTRY_TEST_NO_NATS").is_ok_and(|v| v == "1") {
        eprintln!("SKIPPED: NATS at {url} is unreachable and GANTRY_TEST_NO_NATS=1");
        return None;
    }
    panic!(
        "NATS at {url} is unreachable. Start it with JetStream (.ci/run does: \
         nats-server -js), point GANTRY_TEST_NATS at one, or set GANTRY_TEST_NO_NATS=1 \
         to skip these tests locally (never in CI)"
    );
}

/// A replica of the control plane over the store at `at` on NATS at `url`.
async fn replica(at: &StoreAt, url: &str, id: &str) -> Harness {
    replica_named(at, url, &unique(id), TIMEOUT).await
}

/// `id` made unique (the NATS server outlives a test run).
fn unique(id: &str) -> String {
    format!("{id}-{}", uuid::Uuid::now_v7().simple())
}

/// Replica `id` whose runners have `timeout` to answer.
async fn replica_named(at: &StoreAt, url: &str, id: &str, timeout: Duration) -> Harness {
    let cluster = guarded("NATS", Cluster::connect(url, Some(id.to_owned())))
        .await
        .unwrap();
    let options = ControlPlaneOptions {
        request_timeout: timeout,
        cluster: Some(cluster),
        ..ControlPlaneOptions::default()
    };
    Harness::start_over(at.open().await, options).await
}

/// Adds a runner to the store at `at` (before any replica reads the
/// runners): its id and token.
async fn add_runner(at: &StoreAt) -> (String, String) {
    let cp = ControlPlane::open(at.open().await, ControlPlaneOptions::default())
        .await
        .unwrap();
    let (runner, token) = cp.add_runner("r1").await.unwrap();
    (runner.id, token)
}

support::on_both_backends!(
    a_request_on_one_replica_reaches_the_runner_on_the_other,
    when_the_holding_replica_stops_its_runner_moves_and_followers_miss_nothing,
    a_runner_that_moved_is_reached_where_it_is_now,
    a_request_for_a_runner_of_a_dead_replica_is_refused_at_once,
    a_nats_client_that_is_no_replica_cannot_drive_a_runner_or_feed_followers,
);

/// Waits until replica `h` lists runner `id` as `connected`. What another
/// replica's lease says reaches this one by a watch, with no event a
/// client can wait on: polls, bounded.
async fn wait_listed(h: &Harness, id: &str, connected: bool) {
    guarded("the runner's lease to reach the replica", async {
        loop {
            let (_, runners) = h.get("/v1/runners").await;
            let listed = runners
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["id"] == id && r["connected"] == connected);
            if listed {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// Creates an agent and a thread through `api` on `runner`; the thread id.
async fn agent_and_thread(api: &Harness, runner: &mut FakeRunner, runner_id: &str) -> String {
    let call = api.post_later("/v1/agents", json!({"model": "m1", "runner_id": runner_id}));
    let (id, request) = runner.next_request().await;
    let RunnerRequest::CreateAgentRequest(create) = request else {
        panic!("expected CreateAgentRequest, got {request:?}");
    };
    runner
        .send(
            Some(&id),
            agent_update(&create.agent_id, pb::AgentStatus::Ready),
        )
        .await;
    let (status, agent) = answer(call).await;
    assert_eq!(status, 201, "{agent}");
    let agent_id = agent["id"].as_str().unwrap().to_owned();
    let call = api.post_later(&format!("/v1/agents/{agent_id}/threads"), json!({}));
    let (id, _) = runner.next_request().await;
    let thread_id = format!("thread-of-{id}");
    runner
        .send(
            Some(&id),
            thread_update(&thread_id, pb::ThreadStatus::Ready),
        )
        .await;
    let (status, thread) = answer(call).await;
    assert_eq!(status, 201, "{thread}");
    thread_id
}

/// Sends a message through `api` and has the runner start a turn and
/// write `items` agent messages, leaving the turn running.
async fn start_turn(
    api: &Harness,
    runner: &mut FakeRunner,
    thread_id: &str,
    turn: &str,
    items: usize,
) -> String {
    let call = api.post_later(
        &format!("/v1/threads/{thread_id}/messages"),
        json!({"text": "go"}),
    );
    let (id, request) = runner.next_request().await;
    assert!(
        matches!(request, RunnerRequest::CreateUserMessageRequest(_)),
        "{request:?}"
    );
    runner
        .send(Some(&id), turn_update(turn, TurnStatus::Running))
        .await;
    let (status, accepted) = answer(call).await;
    assert_eq!(status, 202, "{accepted}");
    assert_eq!(accepted["turn_id"], turn);
    for n in 0..items {
        let text = format!("part {n}");
        let item = format!("{turn}-{n}");
        runner
            .send(
                Some(&id),
                item_update(&item, ItemType::AgentMessage, ItemStatus::Completed, &text),
            )
            .await;
    }
    id
}

/// The seqs of SSE events.
fn seqs(events: &[eventsource_stream::Event]) -> Vec<i64> {
    events.iter().map(|e| e.id.parse().unwrap()).collect()
}

async fn a_request_on_one_replica_reaches_the_runner_on_the_other(at: StoreAt) {
    let Some(url) = nats_url() else { return };
    let (runner_id, token) = add_runner(&at).await;
    let b = replica(&at, &url, "b").await;
    let mut runner = FakeRunner::connect(b.grpc, &token, offering("gantry", &["m1"])).await;
    // A starts after the runner connected to B: it learns of both all the same.
    let a = replica(&at, &url, "a").await;
    wait_listed(&a, &runner_id, true).await;

    let thread_id = agent_and_thread(&a, &mut runner, &runner_id).await;
    let mut on_a = a.follow(&thread_id, None).await;
    let mut on_b = b.follow(&thread_id, None).await;
    let mut every_thread_on_a = a.follow_all(None).await;
    let request = start_turn(&a, &mut runner, &thread_id, "t1", 3).await;
    runner
        .send(Some(&request), turn_update("t1", TurnStatus::Completed))
        .await;

    // Thread ready, turn running, three items, turn completed: in order on
    // both replicas, whichever wrote them.
    let seen_a = take_events(&mut on_a, 6).await;
    let seen_b = take_events(&mut on_b, 6).await;
    assert_eq!(seqs(&seen_a), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(seqs(&seen_b), seqs(&seen_a));
    let last: Value = serde_json::from_str(&seen_a[5].data).unwrap();
    assert_eq!(last["kind"], "turn", "{last}");
    assert_eq!(last["data"]["status"], "completed", "{last}");
    // Every thread's stream on the replica that wrote none of it: the same
    // updates from the moment it opened, woken by the writer's JetStream
    // announcements and read from the store.
    // Runner hints (no id) may come between; on PostgreSQL a stream opened
    // without a cursor may also start a little before the moment it opened
    // (never after it).
    let mut seqs_of_thread = Vec::new();
    while seqs_of_thread.last() != Some(&6) {
        let event = take_events(&mut every_thread_on_a, 1).await.remove(0);
        if event.id.is_empty() {
            continue;
        }
        let entry: Value = serde_json::from_str(&event.data).unwrap();
        assert_eq!(entry["thread_id"], json!(thread_id), "{entry}");
        seqs_of_thread.push(entry["seq"].as_i64().unwrap());
    }
    let first = seqs_of_thread[0];
    assert!(first <= 2, "the stream missed updates: {seqs_of_thread:?}");
    assert_eq!(seqs_of_thread, (first..=6).collect::<Vec<_>>());

    // The replica that did not write the thread reads it as written.
    let (status, view) = a.get(&format!("/v1/threads/{thread_id}")).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["turns"][0]["status"], "completed", "{view}");
    assert_eq!(
        view["turns"][0]["items"].as_array().map(Vec::len),
        Some(3),
        "{view}"
    );

    // A runner's refusal reads the same through either replica: 409 with its text.
    let call = a.post_later(
        &format!("/v1/threads/{thread_id}/messages"),
        json!({"text": "again"}),
    );
    let (id, _) = runner.next_request().await;
    runner
        .send(Some(&id), request_error("busy: a turn is running"))
        .await;
    let (status, refused) = answer(call).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["message"], "busy: a turn is running");

    // Ready only with NATS answering; the lag of its watch is a metric.
    let (status, ready) = a.get("/readyz").await;
    assert_eq!((status, &ready["nats"]), (200, &json!("ok")), "{ready}");
    let metrics = a
        .client
        .get(a.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("\ngantry_cp_nats_lag "), "{metrics}");
    a.stop().await;
    b.stop().await;
}

async fn when_the_holding_replica_stops_its_runner_moves_and_followers_miss_nothing(at: StoreAt) {
    let Some(url) = nats_url() else { return };
    let (runner_id, token) = add_runner(&at).await;
    let a = replica(&at, &url, "a").await;
    let b = replica(&at, &url, "b").await;
    let mut runner = FakeRunner::connect(b.grpc, &token, offering("gantry", &["m1"])).await;
    wait_listed(&a, &runner_id, true).await;
    let thread_id = agent_and_thread(&a, &mut runner, &runner_id).await;
    let mut on_a = a.follow(&thread_id, None).await;
    let request = start_turn(&a, &mut runner, &thread_id, "t1", 2).await;
    let before = take_events(&mut on_a, 4).await;
    assert_eq!(seqs(&before), vec![1, 2, 3, 4]);

    // B stops: its runner is offline on A until it connects again.
    b.stop().await;
    assert!(runner.closed().await);
    wait_listed(&a, &runner_id, false).await;
    let (status, offline) = a
        .post(
            &format!("/v1/threads/{thread_id}/messages"),
            json!({"text": "anyone?"}),
        )
        .await;
    assert_eq!(status, 503, "{offline}");

    // The runner moves to A and finishes the turn there.
    let runner = FakeRunner::connect(a.grpc, &token, offering("gantry", &["m1"])).await;
    runner
        .send(
            Some(&request),
            item_update(
                "t1-2",
                ItemType::AgentMessage,
                ItemStatus::Completed,
                "done",
            ),
        )
        .await;
    runner
        .send(Some(&request), turn_update("t1", TurnStatus::Completed))
        .await;
    let after = take_events(&mut on_a, 2).await;
    assert_eq!(seqs(&after), vec![5, 6]);

    // A follower resuming after what it saw gets the rest once.
    let mut resumed = a.follow(&thread_id, Some(4)).await;
    assert_eq!(seqs(&take_events(&mut resumed, 2).await), vec![5, 6]);
    let (_, view) = a.get(&format!("/v1/threads/{thread_id}")).await;
    assert_eq!(view["turns"][0]["status"], "completed", "{view}");
    a.stop().await;
}

/// A runner whose channel to A died unseen connects to B: A drops its old
/// channel at once (B's lease is newer) and routes the runner's requests
/// to B, rather than into the dead channel until a keepalive notices.
async fn a_runner_that_moved_is_reached_where_it_is_now(at: StoreAt) {
    let Some(url) = nats_url() else { return };
    let (runner_id, token) = add_runner(&at).await;
    let a = replica(&at, &url, "a").await;
    let b = replica(&at, &url, "b").await;
    // The first channel stays open on A, unanswered, as a half-open one would.
    let _stale = FakeRunner::connect(a.grpc, &token, offering("gantry", &["m1"])).await;
    wait_listed(&b, &runner_id, true).await;
    let mut runner = FakeRunner::connect(b.grpc, &token, offering("gantry", &["m1"])).await;
    guarded("A to drop the runner's old channel", async {
        loop {
            let metrics = a
                .client
                .get(a.url("/metrics"))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            if metrics.contains("\ngantry_cp_runners_connected 0\n") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let thread_id = agent_and_thread(&a, &mut runner, &runner_id).await;
    let (status, thread) = a.get(&format!("/v1/threads/{thread_id}")).await;
    assert_eq!(status, 200, "{thread}");
    a.stop().await;
    b.stop().await;
}

/// A replica killed without a goodbye (no lease deleted, no runner
/// released) still holds its runners in the others' eyes until its lease
/// runs out. A request for one of them meanwhile is refused at once with
/// 503, as NATS finds nobody serving that replica's subject, rather than
/// waiting out the routing timeout for a 504.
async fn a_request_for_a_runner_of_a_dead_replica_is_refused_at_once(at: StoreAt) {
    let Some(url) = nats_url() else { return };
    let (runner_id, token) = add_runner(&at).await;
    // A runs on a runtime of its own, so that it can die as a killed
    // process does: every task of it dropped at once, its sockets closed,
    // none of its stopping code run.
    let a_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let a_id = unique("a");
    let a = tokio::task::block_in_place(|| {
        a_runtime.block_on(replica_named(&at, &url, &a_id, TIMEOUT))
    });
    // B's routing waits far longer than the test's own bound on an HTTP
    // answer: a request that waited it out would fail the test.
    let routing_timeout = support::GUARD * 6;
    let b = replica_named(&at, &url, &unique("b"), routing_timeout).await;
    let mut runner = FakeRunner::connect(a.grpc, &token, offering("gantry", &["m1"])).await;
    wait_listed(&b, &runner_id, true).await;

    tokio::task::block_in_place(|| a_runtime.shutdown_timeout(support::GUARD));
    drop(a);
    assert!(
        runner.closed().await,
        "A's death closes the runner's channel"
    );
    wait_unserved(&url, &a_id).await;

    // B still lists the runner (A's lease has not run out): its request
    // goes to A, and nobody answers there.
    let (_, runners) = b.get("/v1/runners").await;
    let mut listed = runners.as_array().into_iter().flatten();
    assert!(
        listed.any(|r| r["id"] == runner_id && r["connected"] == true),
        "{runners}"
    );
    let (status, refused) = b
        .post("/v1/agents", json!({"model": "m1", "runner_id": runner_id}))
        .await;
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["error"]["code"], "unavailable", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&runner_id) && message.contains(&a_id) && message.contains("is gone"),
        "{message}"
    );
    b.stop().await;
}

/// Waits until the NATS server has seen replica `id`'s connection close:
/// a request on its subject finds no responder. (Its socket is closed
/// before this is called; the server notices on its own time.)
async fn wait_unserved(url: &str, id: &str) {
    let client = guarded("NATS", async_nats::connect(url)).await.unwrap();
    let subject = format!("gantry.cp.{id}.rpc");
    guarded("NATS to drop the dead replica's subscription", async {
        loop {
            let probe = async_nats::Request::new().timeout(Some(Duration::from_millis(200)));
            match client.send_request(subject.clone(), probe).await {
                Err(e) if e.kind() == async_nats::client::RequestErrorKind::NoResponders => {
                    return;
                }
                Err(e) if e.kind() == async_nats::client::RequestErrorKind::TimedOut => {}
                other => panic!("a dead replica answered: {other:?}"),
            }
        }
    })
    .await;
}

/// A real 0.7 runner held by B, driven through A: A knows its version from
/// the lease (a 0.7-only field is taken, `protocol` says 0.7), and an
/// interrupt, which awaits no reply, reaches it through B.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_07_runner_on_another_replica_is_interrupted_through_it() {
    let Some(url) = nats_url() else { return };
    let at = StoreAt::new(support::Backend::Sqlite).await.unwrap();
    let (runner_id, token) = add_runner(&at).await;
    let llm = gantry_testkit::MockLlm::start(gantry_testkit::Script::new([
        gantry_testkit::Step::tool_call(
            "shell",
            json!({"command": "while [ ! -e release ]; do sleep 0.05; done"}),
        ),
        gantry_testkit::Step::text("Stopped."),
    ]))
    .unwrap();
    let b = replica(&at, &url, "b").await;
    let runner = Runner07::start(&b, &at.dir.path().join("runner"), token, &llm).await;
    let a = replica(&at, &url, "a").await;
    let model = wait_connected(&a, &runner_id).await;
    let (status, agent) = a.post("/v1/agents", json!({})).await;
    assert_eq!(status, 201, "{agent}");
    let agent_id = agent["id"].as_str().unwrap();
    let (status, thread) = a
        .post(
            &format!("/v1/agents/{agent_id}/threads"),
            json!({"model": model, "instructions": "Be brief."}),
        )
        .await;
    assert_eq!(status, 201, "{thread}");
    let thread_id = thread["id"].as_str().unwrap().to_owned();
    let mut events = a.follow(&thread_id, None).await;
    let (status, sent) = a
        .post(
            &format!("/v1/threads/{thread_id}/messages"),
            json!({"text": "wait"}),
        )
        .await;
    assert_eq!(status, 202, "{sent}");
    let is = |event: &eventsource_stream::Event, kind: &str, status: &str| {
        let data: Value = serde_json::from_str(&event.data).unwrap();
        data["kind"] == kind && data["data"]["status"] == status
    };
    guarded("the command to run", async {
        while let Some(event) = events.next().await {
            if is(&event, "item", "running") {
                let data: Value = serde_json::from_str(&event.data).unwrap();
                if data["data"]["type"] == "command_execution" {
                    return;
                }
            }
        }
        panic!("the events ended");
    })
    .await;
    let (status, interrupt) = a
        .post(&format!("/v1/threads/{thread_id}/interrupt"), json!({}))
        .await;
    assert_eq!(status, 202, "{interrupt}");
    guarded("the turn to end", async {
        while let Some(event) = events.next().await {
            if event.event == "turn" && !is(&event, "turn", "running") {
                return;
            }
        }
        panic!("the events ended");
    })
    .await;
    runner.stop().await;
    a.stop().await;
    b.stop().await;
}

/// Anyone who can publish on NATS, as the replicas' traffic shows it to
/// them: a routed request recorded off the wire and sent again, sent
/// without its signature, or changed, is refused and reaches no runner; a
/// thread update changed and published again reaches no follower.
async fn a_nats_client_that_is_no_replica_cannot_drive_a_runner_or_feed_followers(at: StoreAt) {
    let Some(url) = nats_url() else { return };
    let (runner_id, token) = add_runner(&at).await;
    let b_id = unique("b");
    let b = replica_named(&at, &url, &b_id, TIMEOUT).await;
    let mut runner = FakeRunner::connect(b.grpc, &token, offering("gantry", &["m1"])).await;
    let a = replica(&at, &url, "a").await;
    wait_listed(&a, &runner_id, true).await;
    let thread_id = agent_and_thread(&a, &mut runner, &runner_id).await;

    // Eve reads B's requests and the thread's updates as they pass.
    let eve = async_nats::connect(&url).await.unwrap();
    let rpc = format!("gantry.cp.{b_id}.rpc");
    let mut requests = eve.subscribe(rpc.clone()).await.unwrap();
    let mut updates = eve
        .subscribe(format!("gantry.cp.threads.{thread_id}"))
        .await
        .unwrap();
    eve.flush().await.unwrap();
    let mut on_a = a.follow(&thread_id, None).await;
    let request = start_turn(&a, &mut runner, &thread_id, "t1", 1).await;
    let recorded = guarded("a routed request", requests.next()).await.unwrap();
    let mut recorded_update = None;
    while recorded_update.is_none() {
        let update = guarded("a thread update", updates.next()).await.unwrap();
        let body: Value = serde_json::from_slice(&update.payload).unwrap();
        if body["kind"] == "item" {
            recorded_update = Some((update, body));
        }
    }
    let (recorded_update, update_body) = recorded_update.unwrap();
    take_events(&mut on_a, 3).await; // thread ready, turn running, the item

    let text = String::from_utf8(recorded.payload.to_vec()).unwrap();
    let unsigned = async_nats::HeaderMap::new();
    let signed = recorded.headers.clone().unwrap();
    let changed = text.replacen("\"params\":\"", "\"params\":\"x", 1);
    assert_ne!(changed, text, "the change must change something");
    for (what, headers, body) in [
        ("sent again", signed.clone(), text.clone()),
        ("without its signature", unsigned, text.clone()),
        ("changed", signed, changed),
    ] {
        let answer = eve
            .request_with_headers(rpc.clone(), headers, body.into())
            .await
            .unwrap();
        let answer: Value = serde_json::from_slice(&answer.payload).unwrap();
        assert_eq!(answer["error"]["kind"], "bad_request", "{what}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("refused: ")),
            "{what}: {answer}"
        );
    }
    // None of them reached the runner: its next request is the next real one.
    let call = a.post_later("/v1/agents", json!({"model": "m1", "runner_id": runner_id}));
    let (id, next) = runner.next_request().await;
    let RunnerRequest::CreateAgentRequest(create) = next else {
        panic!("a refused request reached the runner: {next:?}");
    };
    runner
        .send(
            Some(&id),
            agent_update(&create.agent_id, pb::AgentStatus::Ready),
        )
        .await;
    assert_eq!(answer(call).await.0, 201);

    // An update Eve changed and published again, under its old signature.
    let mut forged = update_body.clone();
    forged["seq"] = json!(update_body["seq"].as_i64().unwrap() + 1);
    forged["data"] = json!(
        update_body["data"]
            .as_str()
            .unwrap()
            .replace("part 0", "forged by eve")
    );
    assert_ne!(forged["data"], update_body["data"], "{update_body}");
    // Its signature and replica as recorded; a message id of its own, or
    // JetStream would drop it as a repeat.
    let recorded_headers = recorded_update.headers.clone().unwrap();
    let mut headers = async_nats::HeaderMap::new();
    for name in ["Gantry-Signature", "Gantry-Replica"] {
        let value = recorded_headers.get(name).expect(name);
        headers.insert(name, value.as_str());
    }
    headers.insert("Nats-Msg-Id", unique("eve").as_str());
    let ack = async_nats::jetstream::new(eve.clone())
        .publish_with_headers(
            recorded_update.subject.clone(),
            headers,
            serde_json::to_vec(&forged).unwrap().into(),
        )
        .await
        .unwrap()
        .await
        .unwrap();
    assert!(!ack.duplicate, "{ack:?}");
    runner
        .send(Some(&request), turn_update("t1", TurnStatus::Completed))
        .await;
    let next = take_events(&mut on_a, 1).await.remove(0);
    assert!(!next.data.contains("forged by eve"), "{next:?}");
    let entry: Value = serde_json::from_str(&next.data).unwrap();
    assert_eq!(entry["kind"], "turn", "{entry}");
    a.stop().await;
    b.stop().await;
}

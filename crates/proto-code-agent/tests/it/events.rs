//! `SubscribeEvents` over the wire: what happens from the moment of
//! subscribing, in every session or one, filtered by type; errors,
//! warnings, state changes and memory events from real sources.

use crate::common;

use common::{Server, ask, guard, next_of, subscribe};
use gantry_testkit::Step;
use gantry_types::memory::{MemoryClear, MemoryQuery, NewMemory};
use proto_code_agent::pb;
use proto_code_agent::pb::agent_event::EventType;
use serde_json::{Value, json};
use tonic::Code;
use tonic::codec::Streaming;

/// The next event on the stream.
async fn next(events: &mut Streaming<pb::AgentEvent>) -> pb::AgentEvent {
    guard("the next event", events.message())
        .await
        .expect("stream error")
        .expect("the stream ended")
}

fn kind(event: &pb::AgentEvent) -> EventType {
    EventType::try_from(event.r#type).expect("a known event type")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_follows_sessions_generations_and_tool_calls_from_now_on() {
    let mut s = Server::start(vec![
        Step::tool_call("shell", json!({"command": "echo from-the-tool"})),
        Step::text("All done."),
    ])
    .await;
    // Happened before subscribing: not replayed.
    let earlier = s.session().await;
    let mut events = subscribe(&mut s, None, &[]).await;
    let session = s.session().await;

    let created = next(&mut events).await;
    assert_eq!(kind(&created), EventType::SessionCreated, "{created:?}");
    assert_eq!(created.session_id.as_deref(), Some(session.as_str()));
    assert_ne!(created.session_id.as_deref(), Some(earlier.as_str()));
    assert!(
        created.timestamp > 1_600_000_000_000,
        "unix ms: {}",
        created.timestamp
    );
    assert_eq!(created.data["model"], "mock/test-model");

    let answer = s
        .client
        .generate(ask(&session, "run it"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.message.unwrap().content, "All done.");
    s.client
        .destroy_session(pb::DestroySessionRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap();

    let mut seen = Vec::new();
    let destroyed = loop {
        let event = next(&mut events).await;
        assert_eq!(
            event.session_id.as_deref(),
            Some(session.as_str()),
            "{event:?}"
        );
        if kind(&event) == EventType::SessionDestroyed {
            break event;
        }
        seen.push(event);
    };
    assert!(destroyed.message.contains(&session));
    let wanted = [
        EventType::GenerationStarted,
        EventType::ToolCalled,
        EventType::ToolCompleted,
        EventType::GenerationCompleted,
    ];
    let order: Vec<EventType> = seen
        .iter()
        .map(kind)
        .filter(|k| wanted.contains(k))
        .collect();
    assert_eq!(order, wanted, "{seen:#?}");
    let find = |k: EventType| seen.iter().find(|e| kind(e) == k).unwrap();

    let called = &find(EventType::ToolCalled).data;
    assert_eq!(
        called["tool_id"], answer.tool_calls[0].id,
        "the model's call id"
    );
    assert_eq!(called["tool_name"], "bash");
    let args: Value = serde_json::from_str(&called["args"]).unwrap();
    assert_eq!(args["command"], "echo from-the-tool");

    let completed = &find(EventType::ToolCompleted).data;
    assert_eq!(completed["tool_id"], called["tool_id"]);
    assert_eq!(completed["success"], "true");
    assert_eq!(completed["exit_code"], "0");
    assert!(completed["output_length"].parse::<usize>().unwrap() >= "from-the-tool".len());

    let generation = &find(EventType::GenerationCompleted).data;
    assert_eq!(generation["status"], "completed");
    assert_eq!(
        generation["turn_id"],
        find(EventType::GenerationStarted).data["turn_id"]
    );
    let usage = answer.usage.unwrap();
    assert_eq!(generation["total_tokens"], usage.total_tokens.to_string());
    assert_eq!(generation["prompt_tokens"], usage.prompt_tokens.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_gets_only_its_session_and_the_types_it_named() {
    let mut s = Server::start(vec![
        Step::tool_call("shell", json!({"command": "echo other"})),
        Step::text("other done"),
        Step::tool_call("shell", json!({"command": "echo mine"})),
        Step::text("mine done"),
    ])
    .await;
    let mine = s.session().await;
    let other = s.session().await;
    let mut events = subscribe(
        &mut s,
        Some(&mine),
        &["tool_called", "EVENT_TYPE_GENERATION_COMPLETED"],
    )
    .await;
    // The other session's turn comes first; none of it may reach us.
    s.client.generate(ask(&other, "go")).await.unwrap();
    s.client.generate(ask(&mine, "go")).await.unwrap();

    let called = next(&mut events).await;
    assert_eq!(kind(&called), EventType::ToolCalled, "{called:?}");
    assert_eq!(called.session_id.as_deref(), Some(mine.as_str()));
    assert!(called.data["args"].contains("echo mine"), "{called:?}");
    let completed = next(&mut events).await;
    assert_eq!(
        kind(&completed),
        EventType::GenerationCompleted,
        "{completed:?}"
    );
    assert_eq!(completed.session_id.as_deref(), Some(mine.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_types_and_sessions_are_refused() {
    let mut s = Server::start(vec![]).await;
    let err = s
        .client
        .subscribe_events(pb::SubscribeEventsRequest {
            session_id: None,
            event_types: vec!["tool_called".into(), "tool_exploded".into()],
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("tool_exploded"), "{err:?}");
    let err = s
        .client
        .subscribe_events(pb::SubscribeEventsRequest {
            session_id: Some("no-such-session".into()),
            event_types: vec![],
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    // An empty session id is no filter.
    let mut events = subscribe(&mut s, Some(""), &["session_created"]).await;
    let session = s.session().await;
    assert_eq!(
        next(&mut events).await.session_id.as_deref(),
        Some(session.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_generation_is_an_error_and_state_changes_are_info() {
    let mut s = Server::start(vec![]).await;
    // A model server nobody listens on: the turn fails.
    let session = s
        .client
        .create_session(pb::CreateSessionRequest {
            config: Some(pb::SessionConfig {
                llm: Some(pb::LlmConfig {
                    base_url: "http://127.0.0.1:9".into(),
                    ..s.llm_config()
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .session_id;
    let mut events = subscribe(
        &mut s,
        Some(&session),
        &["error", "generation_completed", "info"],
    )
    .await;
    let err = s.client.generate(ask(&session, "hi")).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");

    let error = next(&mut events).await;
    assert_eq!(kind(&error), EventType::Error, "{error:?}");
    assert!(
        error.message.contains("cannot reach model server"),
        "{error:?}"
    );
    let completed = next(&mut events).await;
    assert_eq!(kind(&completed), EventType::GenerationCompleted);
    assert_eq!(completed.data["status"], "failed");
    assert_eq!(completed.data["error"], error.message);
    assert_eq!(completed.data["failure"], "model_unreachable");

    s.client
        .pause(pb::PauseRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap();
    s.client
        .resume(pb::ResumeRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap();
    let paused = next(&mut events).await;
    assert_eq!(
        (kind(&paused), paused.data["event"].as_str()),
        (EventType::Info, "session_paused")
    );
    let resumed = next(&mut events).await;
    assert_eq!(resumed.data["event"], "session_resumed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_generation_warns_and_cancels_its_confirmation() {
    let mut s = Server::start(vec![Step::tool_call(
        "shell",
        json!({"command": "echo never"}),
    )])
    .await;
    let session = s.session().await;
    s.client
        .set_confirmation_policy(pb::SetConfirmationPolicyRequest {
            session_id: session.clone(),
            policy: Some(pb::ConfirmationPolicy {
                enabled: true,
                require_confirm_tools: vec!["shell".into()],
                ..Default::default()
            }),
        })
        .await
        .unwrap();
    let mut events = subscribe(
        &mut s,
        Some(&session),
        &["confirmation_required", "warning", "generation_completed"],
    )
    .await;
    let mut client = s.client.clone();
    let request = ask(&session, "go");
    let generation = tokio::spawn(async move { client.generate(request).await });

    next_of(&mut events, EventType::ConfirmationRequired).await;
    let cancelled = s
        .client
        .cancel(pb::CancelRequest {
            session_id: session.clone(),
            operation_id: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(cancelled.success);
    let err = guard("the generation", generation)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code(), Code::Cancelled, "{err:?}");

    let mut rest = Vec::new();
    for _ in 0..3 {
        rest.push(next(&mut events).await);
    }
    let warnings: Vec<&str> = rest
        .iter()
        .filter(|e| kind(e) == EventType::Warning)
        .map(|e| e.data["event"].as_str())
        .collect();
    assert_eq!(
        warnings,
        ["confirmation_cancelled", "generation_interrupted"],
        "{rest:#?}"
    );
    let completed = rest
        .iter()
        .find(|e| kind(e) == EventType::GenerationCompleted)
        .unwrap();
    assert_eq!(completed.data["status"], "interrupted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_is_reported_as_stored_recalled_searched_and_cleared() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    let mut events = subscribe(
        &mut s,
        None,
        &[
            "memory_stored",
            "memory_recalled",
            "memories_searched",
            "memory_cleared",
        ],
    )
    .await;
    let id = gantry_types::ThreadId::from(session.as_str());
    let stored = s
        .engine
        .memory()
        .store(
            &id,
            NewMemory {
                content: "the build uses make".into(),
                tags: vec!["build".into()],
                ..NewMemory::default()
            },
        )
        .await
        .unwrap();
    s.engine.memory().retrieve(&id, &stored.id).await.unwrap();
    s.engine
        .memory()
        .search(
            &id,
            MemoryQuery {
                query: Some("make".into()),
                ..MemoryQuery::default()
            },
        )
        .await
        .unwrap();
    s.engine
        .memory()
        .clear(&id, MemoryClear::all())
        .await
        .unwrap();

    let e = next(&mut events).await;
    assert_eq!(kind(&e), EventType::MemoryStored);
    assert_eq!(e.session_id.as_deref(), Some(session.as_str()));
    assert_eq!(e.data["memory_id"], stored.id.to_string());
    assert_eq!(e.data["content"], "the build uses make");
    let e = next(&mut events).await;
    assert_eq!(
        (kind(&e), e.data["memory_id"].as_str()),
        (EventType::MemoryRecalled, stored.id.as_str())
    );
    let e = next(&mut events).await;
    assert_eq!(kind(&e), EventType::MemoriesSearched);
    assert_eq!(
        (e.data["query"].as_str(), e.data["result_count"].as_str()),
        ("make", "1")
    );
    let e = next(&mut events).await;
    assert_eq!(
        (kind(&e), e.data["cleared_count"].as_str()),
        (EventType::MemoryCleared, "1")
    );
}

//! Lane handlers over the wire: a lane handed to the client, whose tasks it
//! sees on `SubscribeEvents`, lists, and completes; a hybrid lane the
//! engine runs while clients watch; and the errors.

use crate::common;

use common::{Server, guard, next_of, shell, spawn_generate, subscribe};
use gantry_testkit::Step;
use proto_code_agent::pb;
use proto_code_agent::pb::agent_event::EventType;
use serde_json::Value;
use tonic::Code;
use tonic::codec::Streaming;

async fn set_handler(
    s: &mut Server,
    session: &str,
    lane: pb::SessionLane,
    mode: pb::TaskHandlerMode,
    timeout_ms: u64,
) -> Result<pb::SetLaneHandlerResponse, tonic::Status> {
    s.client
        .set_lane_handler(pb::SetLaneHandlerRequest {
            session_id: session.into(),
            lane: lane as i32,
            config: Some(pb::LaneHandlerConfig {
                mode: mode as i32,
                timeout_ms,
            }),
        })
        .await
        .map(|r| r.into_inner())
}

async fn handler(s: &mut Server, session: &str, lane: pb::SessionLane) -> pb::LaneHandlerConfig {
    s.client
        .get_lane_handler(pb::GetLaneHandlerRequest {
            session_id: session.into(),
            lane: lane as i32,
        })
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap()
}

/// Subscribes to the session's events this file is about.
async fn events_of(s: &mut Server, session: &str) -> Streaming<pb::AgentEvent> {
    subscribe(
        s,
        Some(session),
        &["external_task_pending", "external_task_completed"],
    )
    .await
}

async fn pending(s: &mut Server, session: &str) -> Vec<pb::ExternalTask> {
    s.client
        .list_pending_external_tasks(pb::ListPendingExternalTasksRequest {
            session_id: session.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .tasks
}

async fn complete(
    s: &mut Server,
    session: &str,
    task_id: &str,
    outcome: Result<&str, &str>,
) -> Result<pb::CompleteExternalTaskResponse, tonic::Status> {
    let (success, result, error) = match outcome {
        Ok(r) => (true, r, ""),
        Err(e) => (false, "", e),
    };
    s.client
        .complete_external_task(pb::CompleteExternalTaskRequest {
            session_id: session.into(),
            task_id: task_id.into(),
            success,
            result: result.into(),
            error: error.into(),
        })
        .await
        .map(|r| r.into_inner())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_lane_is_run_by_the_client_and_its_result_reaches_the_model() {
    let mut s = Server::start(vec![
        shell("make release"),
        Step::text("built"),
        shell("make test"),
        Step::text("tests could not run"),
    ])
    .await;
    let session = s.session().await;
    let set = set_handler(
        &mut s,
        &session,
        pb::SessionLane::Execute,
        pb::TaskHandlerMode::External,
        30_000,
    )
    .await
    .unwrap();
    assert!(set.success);
    assert_eq!(
        set.config.unwrap().mode,
        pb::TaskHandlerMode::External as i32
    );
    let read = handler(&mut s, &session, pb::SessionLane::Execute).await;
    assert_eq!(
        (read.mode, read.timeout_ms),
        (pb::TaskHandlerMode::External as i32, 30_000)
    );
    // A lane never set is the engine's own.
    let query = handler(&mut s, &session, pb::SessionLane::Query).await;
    assert_eq!(
        (query.mode, query.timeout_ms),
        (pb::TaskHandlerMode::Internal as i32, 60_000)
    );

    let mut events = events_of(&mut s, &session).await;
    let generation = spawn_generate(&s, &session, "build it");
    let task = next_of(&mut events, EventType::ExternalTaskPending).await;
    assert_eq!(task.data["lane"], "execute");
    assert_eq!(task.data["command_type"], "bash");
    assert_eq!(task.data["timeout_ms"], "30000");
    let payload: Value = serde_json::from_str(&task.data["payload"]).unwrap();
    assert_eq!(payload["command"], "make release");
    let task_id = task.data["task_id"].clone();

    let listed = pending(&mut s, &session).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].task_id, task_id);
    assert_eq!(listed[0].session_id, session);
    assert_eq!(listed[0].lane, pb::SessionLane::Execute as i32);
    assert_eq!(listed[0].command_type, "bash");
    assert_eq!(
        serde_json::from_str::<Value>(&listed[0].payload).unwrap(),
        payload
    );
    assert!(listed[0].remaining_ms <= 30_000 && listed[0].remaining_ms > 0);

    let done = complete(
        &mut s,
        &session,
        &task_id,
        Ok("release built by the client"),
    )
    .await
    .unwrap();
    assert!(done.success && done.error.is_empty());
    let completed = next_of(&mut events, EventType::ExternalTaskCompleted).await;
    assert_eq!(
        (
            completed.data["task_id"].as_str(),
            completed.data["success"].as_str()
        ),
        (task_id.as_str(), "true")
    );
    let response = guard("the generation", generation).await.unwrap().unwrap();
    assert_eq!(
        response.tool_calls[0].result.as_ref().unwrap().output,
        "release built by the client"
    );
    assert!(
        s.llm.requests()[1]
            .body
            .to_string()
            .contains("release built by the client")
    );
    assert!(pending(&mut s, &session).await.is_empty());
    let again = complete(&mut s, &session, &task_id, Ok("twice"))
        .await
        .unwrap_err();
    assert_eq!(again.code(), Code::FailedPrecondition, "{again:?}");

    // A failure the client reports is the call's error.
    let generation = spawn_generate(&s, &session, "build it");
    let task = next_of(&mut events, EventType::ExternalTaskPending).await;
    complete(
        &mut s,
        &session,
        &task.data["task_id"],
        Err("no toolchain here"),
    )
    .await
    .unwrap();
    let completed = next_of(&mut events, EventType::ExternalTaskCompleted).await;
    assert_eq!(completed.data["success"], "false");
    assert_eq!(completed.data["error"], "no toolchain here");
    let response = guard("the generation", generation).await.unwrap().unwrap();
    let result = response.tool_calls[0].result.as_ref().unwrap();
    assert!(
        !result.success && result.output.contains("no toolchain here"),
        "{result:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hybrid_lane_is_run_by_the_engine_while_clients_watch() {
    let mut s = Server::start(vec![shell("echo engine-ran-it"), Step::text("done")]).await;
    let session = s.session().await;
    set_handler(
        &mut s,
        &session,
        pb::SessionLane::Execute,
        pb::TaskHandlerMode::Hybrid,
        0,
    )
    .await
    .unwrap();
    let read = handler(&mut s, &session, pb::SessionLane::Execute).await;
    assert_eq!(
        (read.mode, read.timeout_ms),
        (pb::TaskHandlerMode::Hybrid as i32, 60_000)
    );
    let mut events = events_of(&mut s, &session).await;

    let response = guard("the generation", spawn_generate(&s, &session, "build it"))
        .await
        .unwrap()
        .unwrap();
    assert!(
        response.tool_calls[0]
            .result
            .as_ref()
            .unwrap()
            .output
            .contains("engine-ran-it")
    );
    let task = next_of(&mut events, EventType::ExternalTaskPending).await;
    assert_eq!(task.data["mode"], "hybrid");
    let completed = next_of(&mut events, EventType::ExternalTaskCompleted).await;
    assert!(
        completed.data["result"].contains("engine-ran-it"),
        "{completed:?}"
    );
    let err = complete(&mut s, &session, &task.data["task_id"], Ok("mine"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    assert!(err.message().contains("hybrid"), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_lane_requests_are_refused() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    let err = set_handler(
        &mut s,
        &session,
        pb::SessionLane::Unknown,
        pb::TaskHandlerMode::External,
        0,
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("lane"), "{err:?}");
    let err = set_handler(
        &mut s,
        &session,
        pb::SessionLane::Execute,
        pb::TaskHandlerMode::Unknown,
        0,
    )
    .await
    .unwrap_err();
    assert!(err.message().starts_with("config.mode"), "{err:?}");
    let err = s
        .client
        .set_lane_handler(pb::SetLaneHandlerRequest {
            session_id: session.clone(),
            lane: pb::SessionLane::Execute as i32,
            config: None,
        })
        .await
        .unwrap_err();
    assert!(err.message().starts_with("config"), "{err:?}");
    let err = s
        .client
        .get_lane_handler(pb::GetLaneHandlerRequest {
            session_id: session.clone(),
            lane: 17,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);

    let err = complete(&mut s, &session, "no-such-task", Ok("x"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let err = complete(&mut s, &session, "", Ok("x")).await.unwrap_err();
    assert!(err.message().contains("task_id"), "{err:?}");
    let err = s
        .client
        .list_pending_external_tasks(pb::ListPendingExternalTasksRequest {
            session_id: "no-such-session".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);

    s.client
        .destroy_session(pb::DestroySessionRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap();
    let err = set_handler(
        &mut s,
        &session,
        pb::SessionLane::Execute,
        pb::TaskHandlerMode::External,
        0,
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
}

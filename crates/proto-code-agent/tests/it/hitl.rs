//! Human in the loop over the wire: a generation waits for a confirmation
//! announced on `SubscribeEvents`, a client answers with
//! `ConfirmToolExecution`, the policy's timeout decides when nobody does.

use crate::common;

use common::{Server, guard, next_of, shell, spawn_generate, subscribe};
use gantry_testkit::Step;
use proto_code_agent::pb;
use proto_code_agent::pb::agent_event::EventType;
use serde_json::Value;
use tonic::Code;
use tonic::codec::Streaming;

/// Confirmation for `shell`, answered within `timeout_ms` or `on_timeout`.
fn confirm_shell(timeout_ms: u64, on_timeout: pb::TimeoutAction) -> pb::ConfirmationPolicy {
    pb::ConfirmationPolicy {
        enabled: true,
        auto_approve_tools: vec!["read_file".into()],
        require_confirm_tools: vec!["shell".into()],
        default_timeout_ms: timeout_ms,
        timeout_action: on_timeout as i32,
        yolo_lanes: vec![pb::SessionLane::Query as i32],
    }
}

async fn set_policy(
    s: &mut Server,
    session: &str,
    policy: pb::ConfirmationPolicy,
) -> pb::ConfirmationPolicy {
    let set = s
        .client
        .set_confirmation_policy(pb::SetConfirmationPolicyRequest {
            session_id: session.into(),
            policy: Some(policy),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(set.success);
    set.policy.unwrap()
}

/// Subscribes to the session's events this file is about.
async fn events_of(s: &mut Server, session: &str) -> Streaming<pb::AgentEvent> {
    subscribe(
        s,
        Some(session),
        &[
            "confirmation_required",
            "confirmation_received",
            "confirmation_timeout",
            "tool_completed",
        ],
    )
    .await
}

async fn confirm(
    s: &mut Server,
    session: &str,
    tool_id: &str,
    approved: bool,
    reason: Option<&str>,
) -> Result<pb::ConfirmToolExecutionResponse, tonic::Status> {
    s.client
        .confirm_tool_execution(pb::ConfirmToolExecutionRequest {
            session_id: session.into(),
            tool_id: tool_id.into(),
            approved,
            reason: reason.map(str::to_owned),
        })
        .await
        .map(|r| r.into_inner())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_is_announced_then_approved_and_the_command_runs() {
    let mut s = Server::start(vec![shell("echo approved-run"), Step::text("it ran")]).await;
    let session = s.session().await;
    let stored = set_policy(
        &mut s,
        &session,
        confirm_shell(30_000, pb::TimeoutAction::Reject),
    )
    .await;
    assert_eq!(stored, confirm_shell(30_000, pb::TimeoutAction::Reject));
    let read = s
        .client
        .get_confirmation_policy(pb::GetConfirmationPolicyRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .policy
        .unwrap();
    assert_eq!(read, stored);

    let mut events = events_of(&mut s, &session).await;
    let generation = spawn_generate(&s, &session, "run it");
    let asked = next_of(&mut events, EventType::ConfirmationRequired).await;
    assert_eq!(asked.data["tool_name"], "bash");
    assert_eq!(asked.data["call_id"], "call_1");
    assert_eq!(asked.data["timeout_ms"], "30000");
    assert!(
        asked.data["reason"].contains("requires confirmation"),
        "{asked:?}"
    );
    let args: Value = serde_json::from_str(&asked.data["args"]).unwrap();
    assert_eq!(args["command"], "echo approved-run");
    assert!(
        !generation.is_finished(),
        "the generation waits for the answer"
    );

    let tool_id = asked.data["tool_id"].clone();
    let answer = confirm(&mut s, &session, &tool_id, true, None)
        .await
        .unwrap();
    assert!(answer.success && answer.error.is_empty());
    let received = next_of(&mut events, EventType::ConfirmationReceived).await;
    assert_eq!(
        (
            received.data["tool_id"].as_str(),
            received.data["approved"].as_str()
        ),
        (tool_id.as_str(), "true")
    );
    let ran = next_of(&mut events, EventType::ToolCompleted).await;
    assert_eq!(ran.data["success"], "true");

    let response = guard("the generation", generation).await.unwrap().unwrap();
    assert_eq!(response.message.unwrap().content, "it ran");
    let result = response.tool_calls[0].result.as_ref().unwrap();
    assert!(
        result.success && result.output.contains("approved-run"),
        "{result:?}"
    );

    // Answered once: a second answer is refused.
    let again = confirm(&mut s, &session, &tool_id, false, None)
        .await
        .unwrap_err();
    assert_eq!(again.code(), Code::FailedPrecondition, "{again:?}");
    assert!(
        again.message().contains("already resolved by a client"),
        "{again:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_by_call_id_tells_the_model_why_and_nothing_runs() {
    let mut s = Server::start(vec![
        shell("touch should-not-exist"),
        Step::text("understood"),
    ])
    .await;
    let session = s.session().await;
    set_policy(
        &mut s,
        &session,
        confirm_shell(30_000, pb::TimeoutAction::Reject),
    )
    .await;
    let mut events = events_of(&mut s, &session).await;
    let generation = spawn_generate(&s, &session, "run it");
    let asked = next_of(&mut events, EventType::ConfirmationRequired).await;

    // Answered by the model's call id instead of the approval id.
    let call_id = asked.data["call_id"].clone();
    confirm(&mut s, &session, &call_id, false, Some("not on a Friday"))
        .await
        .unwrap();
    let received = next_of(&mut events, EventType::ConfirmationReceived).await;
    assert_eq!(received.data["approved"], "false");
    assert_eq!(received.data["reason"], "not on a Friday");
    assert_eq!(received.data["tool_id"], asked.data["tool_id"]);

    let response = guard("the generation", generation).await.unwrap().unwrap();
    assert_eq!(response.message.unwrap().content, "understood");
    assert!(!response.tool_calls[0].result.as_ref().unwrap().success);
    assert!(!s.workspace().join("should-not-exist").exists());
    let told = s.llm.requests()[1].body.to_string();
    assert!(
        told.contains("the user denied it: not on a Friday"),
        "{told}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_confirmation_is_decided_by_the_timeout_action() {
    let mut s = Server::start(vec![
        shell("echo auto-approved"),
        Step::text("first"),
        shell("echo rejected"),
        Step::text("second"),
    ])
    .await;
    let session = s.session().await;
    set_policy(
        &mut s,
        &session,
        confirm_shell(200, pb::TimeoutAction::AutoApprove),
    )
    .await;
    let mut events = events_of(&mut s, &session).await;

    let response = guard("the generation", spawn_generate(&s, &session, "run it"))
        .await
        .unwrap()
        .unwrap();
    let timed_out = next_of(&mut events, EventType::ConfirmationTimeout).await;
    assert_eq!(timed_out.data["action_taken"], "auto_approved");
    assert_eq!(timed_out.data["tool_name"], "bash");
    assert!(
        response.tool_calls[0]
            .result
            .as_ref()
            .unwrap()
            .output
            .contains("auto-approved")
    );

    set_policy(
        &mut s,
        &session,
        confirm_shell(200, pb::TimeoutAction::Reject),
    )
    .await;
    let response = guard("the generation", spawn_generate(&s, &session, "run it"))
        .await
        .unwrap()
        .unwrap();
    let timed_out = next_of(&mut events, EventType::ConfirmationTimeout).await;
    assert_eq!(timed_out.data["action_taken"], "rejected");
    assert!(!response.tool_calls[0].result.as_ref().unwrap().success);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_confirmations_and_policies_are_refused() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    // As A3S answers: not a status, `success: false` with the reason.
    let unknown = confirm(&mut s, &session, "no-such-approval", true, None)
        .await
        .unwrap();
    assert!(!unknown.success);
    assert!(unknown.error.contains("no-such-approval"), "{unknown:?}");
    let err = confirm(&mut s, &session, " ", true, None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("tool_id"), "{err:?}");
    let err = confirm(&mut s, "no-such-session", "x", true, None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");

    let set = |policy| pb::SetConfirmationPolicyRequest {
        session_id: session.clone(),
        policy,
    };
    let err = s
        .client
        .set_confirmation_policy(set(None))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("policy"), "{err:?}");
    let bad_lane = pb::ConfirmationPolicy {
        yolo_lanes: vec![42],
        ..Default::default()
    };
    let err = s
        .client
        .set_confirmation_policy(set(Some(bad_lane)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("yolo_lanes[0]"), "{err:?}");
    let bad_action = pb::ConfirmationPolicy {
        timeout_action: 9,
        ..Default::default()
    };
    let err = s
        .client
        .set_confirmation_policy(set(Some(bad_action)))
        .await
        .unwrap_err();
    assert!(err.message().contains("timeout_action"), "{err:?}");

    // Unset fields are the defaults: off, 30 s, reject.
    let policy = s
        .client
        .get_confirmation_policy(pb::GetConfirmationPolicyRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .policy
        .unwrap();
    assert!(!policy.enabled);
    assert_eq!(policy.default_timeout_ms, 30_000);
    assert_eq!(policy.timeout_action, pb::TimeoutAction::Reject as i32);
    let err = s
        .client
        .get_confirmation_policy(pb::GetConfirmationPolicyRequest {
            session_id: "no-such-session".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
}

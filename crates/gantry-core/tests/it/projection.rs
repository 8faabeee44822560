//! The conversation projection every adapter starts from: what a client
//! reading a thread's conversation sees after real turns.

use crate::common;
use common::*;
use gantry_core::projection::{Part, Role, ToolOutcome, conversation};
use gantry_testkit::Step;
use gantry_types::{Refusal, ThreadPolicy};
use serde_json::json;

#[tokio::test]
async fn a_turn_reads_as_user_assistant_tool_results_and_answer() {
    let h = Harness::new(vec![
        Step::tool_call("shell", json!({"command": "echo hi"})).with_text("let me look"),
        Step::text("it says hi"),
    ])
    .await;
    h.run_turn("what does echo say?").await;
    let messages = conversation(&*h.view().await);
    let roles: Vec<&Role> = messages.iter().map(|m| &m.role).collect();
    assert_eq!(
        roles,
        [
            &Role::User,
            &Role::Assistant,
            &Role::ToolResults,
            &Role::Assistant
        ]
    );
    assert_eq!(
        messages[0].parts,
        [Part::Text("what does echo say?".into())]
    );
    // The round's text comes before its tool call, as the model wrote it.
    let [Part::Text(text), Part::ToolUse { call_id, name, .. }] = &messages[1].parts[..] else {
        panic!("{:?}", messages[1].parts);
    };
    assert_eq!((text.as_str(), name.as_str()), ("let me look", "shell"));
    let [
        Part::ToolResult {
            call_id: answered,
            output,
            outcome,
        },
    ] = &messages[2].parts[..]
    else {
        panic!("{:?}", messages[2].parts);
    };
    assert_eq!(answered, call_id);
    assert!(output.contains("hi"), "{output}");
    assert_eq!(*outcome, ToolOutcome::Succeeded);
    assert_eq!(messages[3].parts, [Part::Text("it says hi".into())]);
    assert!(messages.iter().all(|m| m.turn_id == messages[0].turn_id));
}

#[tokio::test]
async fn a_call_the_policy_denies_is_refused_with_the_rule_not_a_failure_text() {
    let h = Harness::new(vec![
        Step::tool_call("shell", json!({"command": "rm -rf build"})),
        Step::text("ok, I will not"),
    ])
    .await;
    let mut policy = ThreadPolicy::default();
    policy.permissions.enabled = true;
    policy.permissions.deny = vec!["Bash(rm:*)".into()];
    h.engine
        .safety()
        .set_policy(&h.thread.id, policy)
        .await
        .unwrap();
    h.run_turn("clean up").await;
    let messages = conversation(&*h.view().await);
    let outcome = messages
        .iter()
        .flat_map(|m| &m.parts)
        .find_map(|p| match p {
            Part::ToolResult { outcome, .. } => Some(outcome.clone()),
            _ => None,
        })
        .expect("the refused call still has its result");
    assert!(outcome.is_failure());
    let ToolOutcome::Refused(Refusal::PolicyDenied { rules, .. }) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(rules, ["Bash(rm:*)"]);
}

#[tokio::test]
async fn an_approval_reads_as_pending_then_as_answered_by_the_client() {
    use gantry_core::Notification;
    use gantry_core::projection::approvals;
    use gantry_types::{
        ApprovalDecision, ApprovalPolicy, ConfirmationPolicy, EventPayload, ItemKind, ResolvedBy,
    };
    let h = Harness::new(vec![
        Step::tool_call("write_file", json!({"path": "a.txt", "content": "x"})),
        Step::text("done"),
    ])
    .await;
    let policy = ThreadPolicy {
        approval: ApprovalPolicy::OnRequest,
        confirmation: ConfirmationPolicy {
            enabled: true,
            require_confirm_tools: vec!["write_file".into()],
            default_timeout_ms: 600_000,
            ..ConfirmationPolicy::default()
        },
        ..ThreadPolicy::default()
    };
    h.engine
        .safety()
        .set_policy(&h.thread.id, policy)
        .await
        .unwrap();
    let (mut sub, turn) = h.start_turn("write it").await;
    wait_for(&mut sub, |n| {
        matches!(n, Notification::Event(e) if matches!(&e.payload,
            EventPayload::ItemStarted { item } if matches!(item.kind, ItemKind::Approval { .. })))
    })
    .await;
    let view = h.view().await;
    let pending: Vec<_> = approvals(&view).collect();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].request.tool, "write_file");
    assert_eq!(pending[0].answer, None, "waiting for an answer");
    let id = pending[0].approval_id.to_owned();
    h.engine
        .safety()
        .resolve_approval(&h.thread.id, &id, ApprovalDecision::Approve)
        .await
        .unwrap();
    until_turn_ends(&mut sub, &turn).await;
    let view = h.view().await;
    let answered: Vec<_> = approvals(&view).collect();
    let answer = answered[0].answer.as_ref().expect("answered");
    assert_eq!(answer.by, Some(ResolvedBy::Client));
    assert_eq!(answer.decision, Some(&ApprovalDecision::Approve));
}

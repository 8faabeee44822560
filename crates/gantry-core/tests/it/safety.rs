//! Human in the loop, external tasks, pause and policy persistence, end to
//! end through the engine with the scripted model and real tools.

use crate::common;

use common::*;
use gantry_core::{EngineConfig, EngineError, Notification, Subscription};
use gantry_testkit::Step;
use gantry_types::{
    ApprovalDecision, ApprovalPolicy, ConfirmationPolicy, EventPayload, HandlerMode, Item,
    ItemKind, ItemStatus, Lane, LaneHandler, ThreadPolicy, TimeoutAction, TurnStatus,
};
use serde_json::json;

/// Every shell call needs a human's confirmation.
fn confirm_shell(timeout_ms: u64, on_timeout: TimeoutAction) -> ThreadPolicy {
    ThreadPolicy {
        // `never` (the default) would turn every ask into a denial.
        approval: ApprovalPolicy::OnRequest,
        confirmation: ConfirmationPolicy {
            enabled: true,
            require_confirm_tools: vec!["shell".into()],
            default_timeout_ms: timeout_ms,
            timeout_action: on_timeout,
            ..ConfirmationPolicy::default()
        },
        ..ThreadPolicy::default()
    }
}

/// Waits for the next item of a kind to start.
async fn started(sub: &mut Subscription, kind: &str) -> Item {
    let n = wait_for(sub, |n| {
        matches!(n, Notification::Event(e)
        if matches!(&e.payload, EventPayload::ItemStarted { item } if item.kind.name() == kind))
    })
    .await;
    let Notification::Event(e) = n else {
        unreachable!()
    };
    let EventPayload::ItemStarted { item } = &e.payload else {
        unreachable!()
    };
    item.clone()
}

fn approval_id(item: &Item) -> String {
    let ItemKind::Approval { approval_id, .. } = &item.kind else {
        panic!("not an approval: {item:?}")
    };
    approval_id.clone()
}

/// What the model was told about the tool call, in request `n`.
/// Moves tokio's clock past `ms` from now at once, then lets it run again
/// (the model's next request must see real time). Called once the turn
/// waits on its timer: the turn armed it before the item that announces
/// the wait was stored.
async fn jump_past(ms: u64) {
    tokio::time::pause();
    tokio::time::advance(std::time::Duration::from_millis(ms + 1)).await;
    tokio::time::resume();
}

fn tool_result(h: &Harness, n: usize) -> String {
    last_tool_result(&h.llm, n)
}

async fn harness(steps: Vec<Step>, policy: ThreadPolicy) -> Harness {
    let h = Harness::new(steps).await;
    h.engine
        .safety()
        .set_policy(&h.thread.id, policy)
        .await
        .unwrap();
    h
}

fn write_step(file: &str) -> Step {
    Step::tool_call("shell", json!({"command": format!("echo ran > {file}")}))
}

#[tokio::test]
async fn an_approved_command_runs_and_a_second_answer_is_refused() {
    let h = harness(
        vec![write_step("a.txt"), Step::text("done")],
        confirm_shell(30_000, TimeoutAction::Reject),
    )
    .await;
    let (mut sub, turn) = h.start_turn("go").await;
    let ask = started(&mut sub, "approval").await;
    let ItemKind::Approval { request, .. } = &ask.kind else {
        unreachable!()
    };
    assert_eq!(request.command.as_deref(), Some("echo ran > a.txt"));
    assert!(
        !h.workspace().join("a.txt").exists(),
        "nothing runs before the answer"
    );

    let id = approval_id(&ask);
    h.engine
        .safety()
        .resolve_approval(&h.thread.id, &id, ApprovalDecision::Approve)
        .await
        .unwrap();
    let again = h
        .engine
        .safety()
        .resolve_approval(&h.thread.id, &id, ApprovalDecision::Abort)
        .await;
    assert!(
        matches!(&again, Err(EngineError::InvalidInput(m)) if m.contains("already resolved")),
        "{again:?}"
    );

    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert!(h.workspace().join("a.txt").exists());
    let resolved = completed_kinds(&seen)
        .into_iter()
        .find(|k| k.name() == "approval")
        .unwrap();
    let ItemKind::Approval {
        decision,
        resolved_by,
        ..
    } = resolved
    else {
        unreachable!()
    };
    assert_eq!(decision, Some(ApprovalDecision::Approve));
    assert_eq!(resolved_by, Some(gantry_types::ResolvedBy::Client));
}

#[tokio::test]
async fn a_denied_command_does_not_run_and_the_model_hears_why() {
    let h = harness(
        vec![write_step("a.txt"), Step::text("ok")],
        confirm_shell(30_000, TimeoutAction::Reject),
    )
    .await;
    let (mut sub, turn) = h.start_turn("go").await;
    let id = approval_id(&started(&mut sub, "approval").await);
    let deny = ApprovalDecision::Deny {
        reason: Some("not on a Friday".into()),
    };
    h.engine
        .safety()
        .resolve_approval(&h.thread.id, &id, deny)
        .await
        .unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert!(!h.workspace().join("a.txt").exists());
    assert!(
        tool_result(&h, 1).contains("not on a Friday"),
        "{}",
        tool_result(&h, 1)
    );
}

#[tokio::test]
async fn an_unanswered_approval_times_out_by_policy() {
    for (action, runs) in [
        (TimeoutAction::Reject, false),
        (TimeoutAction::AutoApprove, true),
    ] {
        // A file write (no process, so no timer of its own) that needs a
        // confirmation nobody gives within ten minutes.
        let mut policy = confirm_shell(600_000, action);
        policy.confirmation.require_confirm_tools = vec!["write_file".into()];
        let write = Step::tool_call("write_file", json!({"path": "a.txt", "content": "x"}));
        let h = harness(vec![write, Step::text("ok")], policy).await;
        let (mut sub, turn) = h.start_turn("go").await;
        started(&mut sub, "approval").await;
        jump_past(600_000).await;
        let seen = until_turn_ends(&mut sub, &turn).await;
        assert_eq!(turn_status(&seen), TurnStatus::Completed);
        assert_eq!(h.workspace().join("a.txt").exists(), runs, "{action:?}");
        let resolved = completed_kinds(&seen)
            .into_iter()
            .find(|k| k.name() == "approval")
            .unwrap();
        let ItemKind::Approval { resolved_by, .. } = resolved else {
            unreachable!()
        };
        assert_eq!(resolved_by, Some(gantry_types::ResolvedBy::Timeout));
        if !runs {
            assert!(
                tool_result(&h, 1).contains("no answer within 600 s"),
                "{}",
                tool_result(&h, 1)
            );
        }
    }
}

#[tokio::test]
async fn abort_at_an_approval_ends_the_turn() {
    let h = harness(
        vec![write_step("a.txt"), Step::text("never")],
        confirm_shell(30_000, TimeoutAction::Reject),
    )
    .await;
    let (mut sub, turn) = h.start_turn("go").await;
    let id = approval_id(&started(&mut sub, "approval").await);
    h.engine
        .safety()
        .resolve_approval(&h.thread.id, &id, ApprovalDecision::Abort)
        .await
        .unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Interrupted);
    assert_eq!(h.llm.request_count(), 1, "no model request after an abort");
    assert!(!h.workspace().join("a.txt").exists());
}

#[tokio::test]
async fn an_interrupt_resolves_a_pending_approval_as_aborted() {
    let h = harness(
        vec![write_step("a.txt"), Step::text("never")],
        confirm_shell(30_000, TimeoutAction::Reject),
    )
    .await;
    let (mut sub, turn) = h.start_turn("go").await;
    started(&mut sub, "approval").await;
    h.engine.turns().interrupt(&h.thread.id).await.unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Interrupted);
    let view = h.view().await;
    let approval = view.turns[0]
        .items
        .iter()
        .find(|i| i.kind.name() == "approval")
        .unwrap();
    assert_ne!(
        approval.status,
        ItemStatus::InProgress,
        "closed by the interrupt"
    );
}

#[tokio::test]
async fn approve_for_session_covers_identical_requests() {
    let h = harness(
        vec![write_step("a.txt"), write_step("a.txt"), Step::text("ok")],
        confirm_shell(30_000, TimeoutAction::Reject),
    )
    .await;
    let (mut sub, turn) = h.start_turn("go").await;
    let id = approval_id(&started(&mut sub, "approval").await);
    h.engine
        .safety()
        .resolve_approval(&h.thread.id, &id, ApprovalDecision::ApproveForSession)
        .await
        .unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let view = h.view().await;
    let kinds: Vec<&str> = view.turns[0].items.iter().map(|i| i.kind.name()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "approval").count(),
        1,
        "asked once: {kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "command_execution").count(),
        2
    );
}

#[tokio::test]
async fn an_external_lane_hands_the_call_to_a_client() {
    let h = Harness::new(vec![write_step("a.txt"), Step::text("thanks")]).await;
    let handler = LaneHandler {
        lane: Lane::Execute,
        mode: HandlerMode::External,
        timeout_ms: 30_000,
    };
    h.engine
        .safety()
        .set_lane_handler(&h.thread.id, handler)
        .await
        .unwrap();
    let (mut sub, turn) = h.start_turn("go").await;
    let task = started(&mut sub, "external_task").await;
    let ItemKind::ExternalTask {
        task_id, payload, ..
    } = &task.kind
    else {
        unreachable!()
    };
    assert_eq!(payload["command"], "echo ran > a.txt");

    let pending = h
        .engine
        .safety()
        .pending_external_tasks(&h.thread.id)
        .await
        .unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(&pending[0].task_id, task_id);
    assert!(pending[0].remaining_ms > 0 && pending[0].remaining_ms <= 30_000);

    h.engine
        .safety()
        .complete_external_task(&h.thread.id, task_id, Ok("ran on the client".into()))
        .await
        .unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert_eq!(tool_result(&h, 1), "ran on the client");
    assert!(
        !h.workspace().join("a.txt").exists(),
        "the engine did not run it"
    );
    assert!(
        h.engine
            .safety()
            .pending_external_tasks(&h.thread.id)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn an_external_task_nobody_completes_fails_the_call_clearly() {
    let h = Harness::new(vec![write_step("a.txt"), Step::text("ok")]).await;
    // Ten minutes: only the paused clock below gets the test there.
    let handler = LaneHandler {
        lane: Lane::Execute,
        mode: HandlerMode::External,
        timeout_ms: 600_000,
    };
    h.engine
        .safety()
        .set_lane_handler(&h.thread.id, handler)
        .await
        .unwrap();
    let (mut sub, turn) = h.start_turn("go").await;
    wait_for(&mut sub, |n| {
        matches!(n, Notification::Event(e) if matches!(&e.payload,
            EventPayload::ItemStarted { item } if matches!(item.kind, ItemKind::ExternalTask { .. })))
    })
    .await;
    // Nobody answers.
    jump_past(600_000).await;
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let told = tool_result(&h, 1);
    assert!(told.contains("was not completed within 600 s"), "{told}");
    assert!(
        !h.workspace().join("a.txt").exists(),
        "the engine did not run it"
    );
}

#[tokio::test]
async fn a_paused_thread_starts_no_model_call_until_resumed() {
    let h = Harness::new(vec![Step::text("hello")]).await;
    h.engine.threads().pause(&h.thread.id).await.unwrap();
    let (mut sub, turn) = h.start_turn("go").await;
    // Interrupting while paused: the turn ends without ever calling the model.
    wait_for(&mut sub, |n| matches!(n, Notification::Event(e) if matches!(e.payload, EventPayload::TurnStarted { .. }))).await;
    let thread = h.view().await.thread.clone();
    assert!(thread.paused, "the thread says it is paused");
    assert_eq!(
        thread.status,
        gantry_types::ThreadStatus::Running,
        "and that its turn is open"
    );
    h.engine.turns().interrupt(&h.thread.id).await.unwrap();
    assert_eq!(
        turn_status(&until_turn_ends(&mut sub, &turn).await),
        TurnStatus::Interrupted
    );
    assert_eq!(h.llm.request_count(), 0);

    // Resumed, the next turn runs.
    h.engine.threads().resume(&h.thread.id).await.unwrap();
    let (_, seen) = h.run_turn("again").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
}

#[tokio::test]
async fn policies_persist_with_the_thread_and_rules_can_be_checked() {
    let h = Harness::new(vec![]).await;
    let mut policy = ThreadPolicy::default();
    policy.permissions.enabled = true;
    policy.permissions.allow = vec!["Bash(git status:*)".into()];
    policy.permissions.deny = vec!["Bash(rm:*)".into()];
    h.engine
        .safety()
        .set_policy(&h.thread.id, policy.clone())
        .await
        .unwrap();

    let (decision, rules) = h
        .engine
        .safety()
        .check_permission(
            &h.thread.id,
            "shell",
            &json!({"command": "git status; rm -rf ~"}),
        )
        .await
        .unwrap();
    assert_eq!(decision, gantry_types::RuleDecision::Deny);
    assert!(rules.iter().any(|r| r == "Bash(rm:*)"), "{rules:?}");

    // A second engine on the same store (as after a restart) sees it.
    h.engine.flush().await.expect("events stored");
    let restarted = engine_at(h.dir.path(), &h.llm, EngineConfig::default()).await;
    let view = restarted.threads().read(&h.thread.id).await.unwrap();
    assert_eq!(view.thread.policy, policy);
}

#[tokio::test]
async fn on_failure_offers_to_rerun_a_failed_command_without_the_sandbox() {
    // Outside the workspace and the temp dir: the sandbox forbids writing here.
    let outside = gantry_testkit::process::dir_outside_temp().unwrap();
    let target = outside.path().join("made-it");
    let command = format!("touch {}", target.display());
    let policy = ThreadPolicy {
        approval: ApprovalPolicy::OnFailure,
        sandbox: gantry_types::SandboxMode::WorkspaceWrite,
        ..ThreadPolicy::default()
    };
    let h = harness(
        vec![
            Step::tool_call("shell", json!({"command": command})),
            Step::text("ok"),
        ],
        policy,
    )
    .await;
    let (mut sub, turn) = h.start_turn("go").await;
    let ask = started(&mut sub, "approval").await;
    assert!(!target.exists(), "the sandbox stopped the first run");
    let ItemKind::Approval { request, .. } = &ask.kind else {
        unreachable!()
    };
    assert!(
        request.reason.contains("without the sandbox"),
        "{}",
        request.reason
    );
    h.engine
        .safety()
        .resolve_approval(&h.thread.id, &approval_id(&ask), ApprovalDecision::Approve)
        .await
        .unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert!(target.exists(), "the approved rerun ran unsandboxed");
    let view = h.view().await;
    let exits: Vec<Option<i32>> = view.turns[0]
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::CommandExecution { exit_code, .. } => Some(*exit_code),
            _ => None,
        })
        .collect();
    assert_eq!(exits.len(), 2);
    assert_ne!(exits[0], Some(0));
    assert_eq!(exits[1], Some(0));
    assert!(
        tool_result(&h, 1).starts_with("Exit code: 0"),
        "{}",
        tool_result(&h, 1)
    );
}

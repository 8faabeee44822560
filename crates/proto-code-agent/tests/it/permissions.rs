//! Permission rules over the wire: a deny rule stops a call and is reported
//! as `PERMISSION_DENIED`; an ask rule asks the client; rules set, read,
//! checked and added; bad input refused.

use crate::common;

use common::{Server, ask, guard, next_of, shell, subscribe};
use gantry_testkit::Step;
use proto_code_agent::pb;
use proto_code_agent::pb::agent_event::EventType;
use serde_json::Value;
use tonic::Code;

fn rules(list: &[&str]) -> Vec<pb::PermissionRule> {
    list.iter()
        .map(|r| pb::PermissionRule { rule: (*r).into() })
        .collect()
}

async fn add_rule(
    s: &mut Server,
    session: &str,
    rule_type: &str,
    rule: &str,
) -> Result<pb::AddPermissionRuleResponse, tonic::Status> {
    s.client
        .add_permission_rule(pb::AddPermissionRuleRequest {
            session_id: session.into(),
            rule_type: rule_type.into(),
            rule: rule.into(),
        })
        .await
        .map(|r| r.into_inner())
}

async fn check(
    s: &mut Server,
    session: &str,
    tool: &str,
    args: &str,
) -> Result<pb::CheckPermissionResponse, tonic::Status> {
    s.client
        .check_permission(pb::CheckPermissionRequest {
            session_id: session.into(),
            tool_name: tool.into(),
            arguments: args.into(),
        })
        .await
        .map(|r| r.into_inner())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_rule_stops_the_call_tells_the_model_and_is_reported() {
    let mut s = Server::start(vec![
        shell("rm -f keep.txt"),
        Step::text("could not remove it"),
    ])
    .await;
    std::fs::write(s.workspace().join("keep.txt"), "precious").unwrap();
    let session = s.session().await;
    let added = add_rule(&mut s, &session, "deny", "Bash(rm:*)")
        .await
        .unwrap();
    assert!(added.success && added.error.is_empty());
    let policy = s
        .client
        .get_permission_policy(pb::GetPermissionPolicyRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .policy
        .unwrap();
    assert!(policy.enabled, "adding a rule turns the rules on");
    assert_eq!(policy.deny, rules(&["Bash(rm:*)"]));

    let mut events = subscribe(
        &mut s,
        Some(&session),
        &["permission_denied", "tool_completed"],
    )
    .await;
    let response = s
        .client
        .generate(ask(&session, "clean up"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(response.message.unwrap().content, "could not remove it");
    assert!(!response.tool_calls[0].result.as_ref().unwrap().success);
    assert!(
        s.workspace().join("keep.txt").exists(),
        "the command did not run"
    );
    assert!(
        s.llm.requests()[1]
            .body
            .to_string()
            .contains("denied by permission rule `Bash(rm:*)`")
    );

    let completed = next_of(&mut events, EventType::ToolCompleted).await;
    assert_eq!(completed.data["success"], "false");
    let denied = next_of(&mut events, EventType::PermissionDenied).await;
    assert_eq!(denied.session_id.as_deref(), Some(session.as_str()));
    assert_eq!(denied.data["tool_id"], response.tool_calls[0].id);
    assert_eq!(denied.data["tool_name"], "bash");
    let args: Value = serde_json::from_str(&denied.data["args"]).unwrap();
    assert_eq!(args["command"], "rm -f keep.txt");
    assert!(denied.data["reason"].contains("Bash(rm:*)"), "{denied:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_rule_asks_the_client_before_running() {
    let mut s = Server::start(vec![shell("echo asked-first"), Step::text("ok")]).await;
    let session = s.session().await;
    add_rule(&mut s, &session, "ask", "Bash(echo:*)")
        .await
        .unwrap();
    let mut events = subscribe(&mut s, Some(&session), &["confirmation_required"]).await;
    let mut client = s.client.clone();
    let request = ask(&session, "say it");
    let generation = tokio::spawn(async move { client.generate(request).await });

    let asked = next_of(&mut events, EventType::ConfirmationRequired).await;
    assert!(asked.data["reason"].contains("Bash(echo:*)"), "{asked:?}");
    s.client
        .confirm_tool_execution(pb::ConfirmToolExecutionRequest {
            session_id: session.clone(),
            tool_id: asked.data["tool_id"].clone(),
            approved: true,
            reason: None,
        })
        .await
        .unwrap();
    let response = guard("the generation", generation)
        .await
        .unwrap()
        .unwrap()
        .into_inner();
    assert!(
        response.tool_calls[0]
            .result
            .as_ref()
            .unwrap()
            .output
            .contains("asked-first")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_is_set_read_and_checked() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    let policy = pb::PermissionPolicy {
        deny: rules(&["Read(secrets/**)"]),
        allow: rules(&["Bash(cargo:*)"]),
        ask: rules(&["Bash(git push:*)"]),
        default_decision: pb::PermissionDecision::Ask as i32,
        enabled: true,
    };
    let set = s
        .client
        .set_permission_policy(pb::SetPermissionPolicyRequest {
            session_id: session.clone(),
            policy: Some(policy.clone()),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(set.success);
    assert_eq!(set.policy.as_ref(), Some(&policy));
    let read = s
        .client
        .get_permission_policy(pb::GetPermissionPolicyRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(read.policy, Some(policy));

    let cases = [
        (
            "shell",
            r#"{"command":"cargo build"}"#,
            pb::PermissionDecision::Allow,
            vec!["Bash(cargo:*)"],
        ),
        (
            "shell",
            r#"{"command":"git push origin"}"#,
            pb::PermissionDecision::Ask,
            vec!["Bash(git push:*)"],
        ),
        (
            "read_file",
            r#"{"path":"secrets/key.pem"}"#,
            pb::PermissionDecision::Deny,
            vec!["Read(secrets/**)"],
        ),
        (
            "shell",
            r#"{"command":"ls"}"#,
            pb::PermissionDecision::Ask,
            vec![],
        ),
    ];
    for (tool, args, decision, matching) in cases {
        let got = check(&mut s, &session, tool, args).await.unwrap();
        assert_eq!(got.decision, decision as i32, "{tool} {args}");
        assert_eq!(got.matching_rules, matching, "{tool} {args}");
    }

    // Adding a rule keeps the others and adds it once.
    add_rule(&mut s, &session, "Allow", "Bash(ls)")
        .await
        .unwrap();
    add_rule(&mut s, &session, "allow", "Bash(ls)")
        .await
        .unwrap();
    let got = check(&mut s, &session, "shell", r#"{"command":"ls"}"#)
        .await
        .unwrap();
    assert_eq!(got.decision, pb::PermissionDecision::Allow as i32);
    let read = s
        .client
        .get_permission_policy(pb::GetPermissionPolicyRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .policy
        .unwrap();
    assert_eq!(read.allow, rules(&["Bash(cargo:*)", "Bash(ls)"]));
    assert_eq!(read.deny.len(), 1);

    // Rules off: everything is allowed, by no rule.
    s.client
        .set_permission_policy(pb::SetPermissionPolicyRequest {
            session_id: session.clone(),
            policy: Some(pb::PermissionPolicy::default()),
        })
        .await
        .unwrap();
    let got = check(
        &mut s,
        &session,
        "read_file",
        r#"{"path":"secrets/key.pem"}"#,
    )
    .await
    .unwrap();
    assert_eq!(got.decision, pb::PermissionDecision::Allow as i32);
    assert!(got.matching_rules.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_rules_arguments_and_sessions_are_refused() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    let err = check(&mut s, &session, "mcp__fs__read", "{not json")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("arguments"), "{err:?}");
    let err = check(&mut s, &session, "", "{}").await.unwrap_err();
    assert!(err.message().contains("tool_name"), "{err:?}");
    let err = check(&mut s, "no-such-session", "shell", "{}")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);

    let err = add_rule(&mut s, &session, "deny", "Bash(rm:*")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("rule:"), "{err:?}");
    let err = add_rule(&mut s, &session, "block", "Bash")
        .await
        .unwrap_err();
    assert!(err.message().starts_with("rule_type"), "{err:?}");
    let err = add_rule(&mut s, "no-such-session", "deny", "Bash")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);

    let set = |policy| pb::SetPermissionPolicyRequest {
        session_id: session.clone(),
        policy,
    };
    let err = s.client.set_permission_policy(set(None)).await.unwrap_err();
    assert!(err.message().starts_with("policy"), "{err:?}");
    let invalid = pb::PermissionPolicy {
        enabled: true,
        deny: rules(&["Bash(rm:*)", "Read("]),
        ..Default::default()
    };
    let err = s
        .client
        .set_permission_policy(set(Some(invalid)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("policy.deny[1]"), "{err:?}");
    let bad_default = pb::PermissionPolicy {
        default_decision: 8,
        ..Default::default()
    };
    let err = s
        .client
        .set_permission_policy(set(Some(bad_default)))
        .await
        .unwrap_err();
    assert!(err.message().contains("default_decision"), "{err:?}");
    // Nothing of the refused policies was applied.
    let read = s
        .client
        .get_permission_policy(pb::GetPermissionPolicyRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .policy
        .unwrap();
    assert_eq!(
        read,
        pb::PermissionPolicy {
            default_decision: pb::PermissionDecision::Allow as i32,
            ..Default::default()
        }
    );
}

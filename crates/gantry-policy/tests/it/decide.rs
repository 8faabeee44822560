//! The precedence of `decide`: rules, session grants, the approval and
//! confirmation policies; what a human's answer does; lanes.

use std::path::Path;

use gantry_policy::{
    Resolution, SessionGrants, ToolRequest, Verdict, approval_request, asks_on_failure, decide,
    lane_of, resolve,
};
use gantry_types::{
    ApprovalDecision, ApprovalPolicy, ConfirmationPolicy, Lane, RejectConfig, RuleDecision,
    ThreadPolicy, TimeoutAction,
};
use serde_json::json;

use crate::support::{WS, decide_on, is_ask, is_deny, req, rules, shell_verdict};
use RuleDecision::Allow;

#[test]
fn lanes() {
    assert_eq!(lane_of("read_file"), Lane::Query);
    assert_eq!(lane_of("list_dir"), Lane::Query);
    assert_eq!(lane_of("glob"), Lane::Query);
    assert_eq!(lane_of("grep"), Lane::Query);
    assert_eq!(lane_of("shell"), Lane::Execute);
    assert_eq!(lane_of("write_file"), Lane::Execute);
    assert_eq!(lane_of("edit_file"), Lane::Execute);
    assert_eq!(lane_of("mcp__s__t"), Lane::Execute);
}

#[test]
fn default_thread_policy_is_as_today() {
    let p = ThreadPolicy::default();
    for command in ["rm -rf /", "$X", "git status > /etc/passwd", "echo 'x"] {
        assert_eq!(shell_verdict(&p, command), Verdict::Allow);
    }
    assert_eq!(
        decide_on(&p, &SessionGrants::default(), "mcp__s__t", json!({})),
        Verdict::Allow
    );
}

#[test]
fn deny_reason_names_the_rule() {
    let p = ThreadPolicy {
        permissions: rules(&[], &[], &["Bash(rm:*)"], Allow),
        ..ThreadPolicy::default()
    };
    let Verdict::Deny { reason, rules } = shell_verdict(&p, "ls && rm -rf /") else {
        panic!("expected deny")
    };
    assert!(reason.contains("Bash(rm:*)"), "{reason}");
    assert_eq!(rules, vec!["Bash(rm:*)".to_string()]);
}

#[test]
fn approval_never_turns_asks_into_denials() {
    let p = ThreadPolicy {
        permissions: rules(&[], &["Bash(git push:*)"], &[], Allow),
        approval: ApprovalPolicy::Never,
        ..ThreadPolicy::default()
    };
    let v = shell_verdict(&p, "git push");
    let Verdict::Deny { reason, .. } = &v else {
        panic!("expected deny, got {v:?}")
    };
    assert!(reason.contains("never"), "{reason}");
    assert_eq!(shell_verdict(&p, "git status"), Verdict::Allow);
}

#[test]
fn approval_on_request_asks_only_when_rules_say_so() {
    let p = ThreadPolicy {
        permissions: rules(&[], &["Bash(git push:*)"], &[], Allow),
        approval: ApprovalPolicy::OnRequest,
        ..ThreadPolicy::default()
    };
    let v = shell_verdict(&p, "git push");
    let Verdict::Ask {
        timeout_ms,
        on_timeout,
        rules,
        ..
    } = &v
    else {
        panic!("expected ask, got {v:?}")
    };
    assert_eq!(*timeout_ms, 30_000);
    assert_eq!(*on_timeout, TimeoutAction::Reject);
    assert_eq!(rules, &vec!["Bash(git push:*)".to_string()]);
    assert_eq!(shell_verdict(&p, "rm -rf x"), Verdict::Allow);
}

#[test]
fn approval_untrusted_allows_only_known_safe_commands() {
    let p = ThreadPolicy {
        approval: ApprovalPolicy::Untrusted,
        ..ThreadPolicy::default()
    };
    for safe in [
        "ls -la",
        "git status",
        "git log --oneline | head -5",
        "cat README.md && wc -l src/*.rs",
        "rg -n TODO src",
        "find . -name '*.rs'",
    ] {
        assert_eq!(shell_verdict(&p, safe), Verdict::Allow, "{safe}");
    }
    for unsafe_ in [
        "cargo build",
        "rm x",
        "ls > out",
        "find . -delete",
        "git status; rm -rf ~",
        "echo $(rm x)",
        "git push",
    ] {
        assert!(is_ask(&shell_verdict(&p, unsafe_)), "{unsafe_}");
    }
    let g = SessionGrants::default();
    assert_eq!(
        decide_on(&p, &g, "read_file", json!({"path": "x"})),
        Verdict::Allow
    );
    assert!(is_ask(&decide_on(
        &p,
        &g,
        "write_file",
        json!({"path": "x", "content": ""})
    )));
    // An explicit allow rule is trusted.
    let p = ThreadPolicy {
        permissions: rules(&["Bash(cargo:*)"], &[], &[], Allow),
        approval: ApprovalPolicy::Untrusted,
        ..ThreadPolicy::default()
    };
    assert_eq!(shell_verdict(&p, "cargo build"), Verdict::Allow);
    assert!(is_ask(&shell_verdict(&p, "cargo build && make")));
}

#[test]
fn approval_on_failure_runs_and_reports_asks_on_failure() {
    let p = ThreadPolicy {
        approval: ApprovalPolicy::OnFailure,
        ..ThreadPolicy::default()
    };
    assert_eq!(shell_verdict(&p, "cargo build"), Verdict::Allow);
    assert!(asks_on_failure(&p));
    assert!(!asks_on_failure(&ThreadPolicy::default()));
}

#[test]
fn approval_reject_refuses_rule_prompts() {
    let p = ThreadPolicy {
        permissions: rules(&[], &["Bash(git push:*)"], &[], Allow),
        approval: ApprovalPolicy::Reject(RejectConfig {
            rules: true,
            ..RejectConfig::default()
        }),
        ..ThreadPolicy::default()
    };
    assert!(is_deny(&shell_verdict(&p, "git push")));
    assert_eq!(shell_verdict(&p, "ls"), Verdict::Allow);
    let p = ThreadPolicy {
        approval: ApprovalPolicy::Reject(RejectConfig::default()),
        ..p
    };
    assert!(is_ask(&shell_verdict(&p, "git push")));
}

#[test]
fn session_grants_allow_identical_requests_but_not_over_deny() {
    let mut p = ThreadPolicy {
        permissions: rules(&[], &["Bash(git push:*)"], &[], Allow),
        approval: ApprovalPolicy::OnRequest,
        ..ThreadPolicy::default()
    };
    let mut grants = SessionGrants::default();
    let args = json!({"command": "git push"});
    let req = ToolRequest {
        tool: "shell",
        args: &args,
        workspace: Path::new(WS),
    };
    assert!(is_ask(&decide(&p, &grants, &req)));
    assert_eq!(
        resolve(&mut grants, &req, &ApprovalDecision::ApproveForSession),
        Resolution::Run
    );
    assert_eq!(decide(&p, &grants, &req), Verdict::Allow);
    // Not identical: asks again.
    assert!(is_ask(&decide_on(
        &p,
        &grants,
        "shell",
        json!({"command": "git push --tags"})
    )));
    // A deny rule added later wins over the grant.
    p.permissions.deny.push("Bash(git push:*)".into());
    assert!(is_deny(&decide(&p, &grants, &req)));
}

#[test]
fn resolve_decisions() {
    let mut grants = SessionGrants::default();
    let args = json!({"command": "x"});
    let req = ToolRequest {
        tool: "shell",
        args: &args,
        workspace: Path::new(WS),
    };
    assert_eq!(
        resolve(&mut grants, &req, &ApprovalDecision::Approve),
        Resolution::Run
    );
    assert!(grants.is_empty());
    let Resolution::Refuse { reason } = resolve(
        &mut grants,
        &req,
        &ApprovalDecision::Deny {
            reason: Some("use the staging db".into()),
        },
    ) else {
        panic!()
    };
    assert!(reason.contains("use the staging db"));
    assert_eq!(
        resolve(&mut grants, &req, &ApprovalDecision::Abort),
        Resolution::Abort
    );
}

#[test]
fn confirmation_policy() {
    let confirmation = ConfirmationPolicy {
        enabled: true,
        auto_approve_tools: vec!["write_file".into()],
        require_confirm_tools: vec!["Read".into()],
        default_timeout_ms: 5_000,
        timeout_action: TimeoutAction::AutoApprove,
        yolo_lanes: vec![],
    };
    let p = ThreadPolicy {
        approval: ApprovalPolicy::OnRequest,
        confirmation: confirmation.clone(),
        ..ThreadPolicy::default()
    };
    let g = SessionGrants::default();
    // Execute-lane tools ask once confirmation is on...
    let v = shell_verdict(&p, "ls");
    let Verdict::Ask {
        timeout_ms,
        on_timeout,
        ..
    } = v
    else {
        panic!("expected ask, got {v:?}")
    };
    assert_eq!(
        (timeout_ms, on_timeout),
        (5_000, TimeoutAction::AutoApprove)
    );
    // ... unless auto-approved.
    assert_eq!(
        decide_on(&p, &g, "write_file", json!({"path": "a", "content": ""})),
        Verdict::Allow
    );
    // Query tools do not, unless required (by rule name or Gantry name).
    assert_eq!(
        decide_on(&p, &g, "grep", json!({"pattern": "x"})),
        Verdict::Allow
    );
    assert!(is_ask(&decide_on(
        &p,
        &g,
        "read_file",
        json!({"path": "a"})
    )));

    // A yolo lane allows everything in it, rule asks included, but not denials.
    let p = ThreadPolicy {
        permissions: rules(&[], &["Bash(git push:*)"], &["Bash(rm:*)"], Allow),
        approval: ApprovalPolicy::OnRequest,
        confirmation: ConfirmationPolicy {
            yolo_lanes: vec![Lane::Execute],
            ..confirmation
        },
        ..ThreadPolicy::default()
    };
    assert_eq!(shell_verdict(&p, "git push"), Verdict::Allow);
    assert!(is_deny(&shell_verdict(&p, "rm x")));
    assert!(is_ask(&decide_on(
        &p,
        &g,
        "read_file",
        json!({"path": "a"})
    )));
}

#[test]
fn approval_request_carries_what_a_client_shows() {
    let p = ThreadPolicy {
        permissions: rules(&[], &["Bash(git push:*)"], &[], Allow),
        approval: ApprovalPolicy::OnRequest,
        ..ThreadPolicy::default()
    };
    let args = json!({"command": "git push", "workdir": "sub"});
    let req = ToolRequest {
        tool: "shell",
        args: &args,
        workspace: Path::new(WS),
    };
    let v = decide(&p, &SessionGrants::default(), &req);
    let a = approval_request("call_1", &req, &v).expect("ask");
    assert_eq!(a.command.as_deref(), Some("git push"));
    assert_eq!(a.cwd, "/work/repo/sub");
    assert_eq!(a.lane, Lane::Execute);
    assert_eq!(a.matched_rules, vec!["Bash(git push:*)".to_string()]);
    assert_eq!(a.available_decisions.len(), 4);
    assert!(approval_request("c", &req, &Verdict::Allow).is_none());
}

#[test]
fn default_policy_allows_everything() {
    let p = ThreadPolicy::default();
    let g = SessionGrants::default();
    for (tool, args) in [
        ("shell", json!({"command": "rm -rf / ; $X"})),
        ("write_file", json!({"path": "/etc/passwd", "content": ""})),
        ("mcp__s__t", json!({})),
    ] {
        assert_eq!(decide(&p, &g, &req(tool, &args)), Verdict::Allow);
    }
}

#[test]
fn grants_key_ignores_order_and_timeout() {
    let mut g = SessionGrants::default();
    let a = json!({"command": "cargo test", "timeout_ms": 5});
    let b = json!({"timeout_ms": 9, "command": "cargo test"});
    g.insert(&req("shell", &a));
    assert!(g.contains(&req("shell", &b)));
    assert!(!g.contains(&req("shell", &json!({"command": "cargo test -q"}))));
    let x = json!({"path": "a", "content": "1"});
    let y = json!({"content": "1", "path": "a"});
    g.insert(&req("write_file", &x));
    assert!(g.contains(&req("write_file", &y)));
}

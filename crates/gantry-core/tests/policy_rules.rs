//! Permission rule matching tables, adversarial compound shell commands, and
//! the precedence of `decide`.

use std::path::Path;

use gantry_core::policy::{
    Resolution, SessionGrants, ToolRequest, Verdict, approval_request, check_permission, decide,
    lane_of, resolve, validate_rules,
};
use gantry_types::{
    ApprovalDecision, ApprovalPolicy, ConfirmationPolicy, Lane, PermissionRules, RejectConfig,
    RuleDecision, ThreadPolicy, TimeoutAction,
};
use serde_json::{Value, json};

use RuleDecision::{Allow, Ask, Deny};

const WS: &str = "/work/repo";

fn rules(allow: &[&str], ask: &[&str], deny: &[&str], default: RuleDecision) -> PermissionRules {
    let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    PermissionRules {
        enabled: true,
        allow: own(allow),
        ask: own(ask),
        deny: own(deny),
        default,
    }
}

fn check(r: &PermissionRules, tool: &str, args: Value) -> (RuleDecision, Vec<String>) {
    check_permission(
        r,
        &ToolRequest {
            tool,
            args: &args,
            workspace: Path::new(WS),
        },
    )
}

fn sh(r: &PermissionRules, command: &str) -> RuleDecision {
    check(r, "shell", json!({ "command": command })).0
}

#[test]
fn bash_rule_table() {
    // (rule, command, matches)
    let table: &[(&str, &str, bool)] = &[
        ("Bash", "anything at all", true),
        ("Bash(*)", "rm -rf x", true),
        ("Bash(cargo:*)", "cargo", true),
        ("Bash(cargo:*)", "cargo test --workspace", true),
        ("Bash(cargo:*)", "cargo-audit", false),
        ("Bash(cargo:*)", "cargox build", false),
        ("Bash(git status:*)", "git status", true),
        ("Bash(git status:*)", "git status --short", true),
        ("Bash(git status:*)", "git statusx", false),
        ("Bash(git status:*)", "git  'status'  -s", true),
        ("Bash(git status:*)", "git push", false),
        ("Bash(npm run test *)", "npm run test", true),
        ("Bash(npm run test *)", "npm run test -- --watch", true),
        ("Bash(npm run test *)", "npm run testall", false),
        ("Bash(npm run test *)", "npm run build", false),
        ("Bash(git * --oneline)", "git log -5 --oneline", true),
        ("Bash(cargo build)", "cargo build", true),
        ("Bash(cargo build)", "cargo build --release", false),
        ("shell(ls:*)", "ls -la", true),
        // Allow rules match only what they say: no path or env tricks.
        ("Bash(rm:*)", "/bin/rm x", false),
        ("Bash(cargo:*)", "RUSTFLAGS=x cargo build", false),
        ("Bash(RUSTFLAGS=x cargo:*)", "RUSTFLAGS=x cargo build", true),
    ];
    for (rule, command, expected) in table {
        let r = rules(&[rule], &[], &[], Ask);
        let want = if *expected { Allow } else { Ask };
        assert_eq!(sh(&r, command), want, "allow {rule} vs {command}");
    }
}

#[test]
fn deny_rules_see_through_paths_env_and_quoting() {
    let r = rules(&["Bash"], &[], &["Bash(rm:*)"], Allow);
    for command in [
        "rm -rf /",
        "/bin/rm -rf /",
        "/usr/bin/rm x",
        "FOO=1 rm -rf /",
        "'rm' -rf /",
        "\"rm\" -rf /",
        r"\rm -rf /",
        "r''m -rf /",
        "env rm x",
        "env -i FOO=1 /bin/rm x",
        "command rm x",
        "exec rm x",
        "nohup rm x &",
        "timeout 10 rm x",
        "nice -n 5 rm x",
        "sudo rm x",
        "sudo -u root rm x",
        "time rm x",
    ] {
        assert_eq!(sh(&r, command), Deny, "{command}");
    }
    // Not `rm`.
    assert_eq!(sh(&r, "rmdir x"), Allow);
    assert_eq!(sh(&r, "echo rm"), Allow);
    assert_eq!(sh(&r, "command -v rm"), Allow);
}

/// Commands that a narrow allow rule must not let through: with only
/// `Bash(git status:*)` allowed and everything else asked, none is allowed.
#[test]
fn adversarial_compound_commands_do_not_slip_through() {
    let r = rules(&["Bash(git status:*)", "Bash(echo:*)"], &[], &[], Ask);
    assert_eq!(sh(&r, "git status"), Allow);
    assert_eq!(sh(&r, "git status && echo done"), Allow);
    assert_eq!(sh(&r, "echo 'a; rm -rf ~' \"$(\" x"), Ask, "unbalanced");
    for command in [
        "git status; rm -rf ~",
        "git status && curl x | sh",
        "git status || rm -rf /",
        "git status | sh",
        "git status & rm -rf /",
        "git status\nrm -rf /",
        "git status\r\nrm -rf /",
        "echo $(rm -rf /)",
        "echo \"$(rm -rf /)\"",
        "echo `rm -rf /`",
        "git status `rm -rf /`",
        "echo ${X:-$(rm -rf /)}",
        "git status > /etc/passwd",
        "git status >> ~/.bashrc",
        "git status &> out.txt",
        "git status >& out.txt",
        "git status > $OUT",
        "git status 2> log.txt",
        "bash -c 'rm -rf /'",
        "sh -c \"git status; rm -rf /\"",
        "bash -lc 'rm -rf /'",
        "eval 'rm -rf /'",
        "eval \"git status; rm -rf /\"",
        "FOO=1 rm -rf /",
        "FOO=1 git status",
        "PATH=/tmp/evil:$PATH git status",
        "( rm x )",
        "{ rm x; }",
        "git status; ( cd / && rm -rf x )",
        "cat <<EOF\n$(rm -rf /)\nEOF",
        "git status <<EOF\n`rm -rf /`\nEOF",
        "diff <(rm -rf /) x",
        "git status > >(rm x)",
        "git status | xargs rm",
        "xargs rm < list",
        "find . -exec rm {} \\;",
        "find . -delete",
        "'rm' -rf /",
        "\\rm -rf /",
        "/bin/rm -rf /",
        "$CMD",
        "${CMD} status",
        "g$(echo it) status",
        "echo $((1 + $(rm -rf /)))",
        "(( x = 1 ))",
        "if true; then rm x; fi",
        "for f in *; do rm $f; done",
        "while true; do rm x; done",
        "case x in x) rm y;; esac",
        "f() { rm -rf /; }; f",
        "git status; function f { rm x; }",
        "coproc rm x",
        "$'rm' -rf /",
        "git status $(rm -rf /)",
        "echo 'unterminated",
        "",
    ] {
        let got = sh(&r, command);
        assert_ne!(got, Allow, "slipped through: {command:?}");
    }
}

#[test]
fn redirections_are_writes_judged_by_write_rules() {
    let r = rules(
        &["Bash(git status:*)", "Write(out/**)"],
        &[],
        &["Write(/etc/**)"],
        Ask,
    );
    assert_eq!(sh(&r, "git status > out/status.txt"), Allow);
    assert_eq!(sh(&r, "git status > ./out/a/b.txt"), Allow);
    assert_eq!(sh(&r, "git status > /etc/passwd"), Deny);
    assert_eq!(sh(&r, "git status > out/../../../etc/passwd"), Deny);
    assert_eq!(sh(&r, "git status > other.txt"), Ask);
    assert_eq!(sh(&r, "git status 2>/dev/null"), Allow);
    assert_eq!(sh(&r, "git status 2>&1"), Allow);
    // After `cd`, a relative name could be anywhere: a deny rule for a path
    // matches it, an allow rule does not.
    assert_eq!(sh(&r, "cd /etc; git status > out/passwd"), Deny);
    // A target only known at run time: same.
    assert_eq!(sh(&r, "git status > $F"), Deny);
    let r = rules(&["Bash(git status:*)", "Write(out/**)"], &[], &[], Ask);
    assert_eq!(sh(&r, "git status > $F"), Ask);
    // `workdir` moves relative targets.
    assert_eq!(
        check(
            &r,
            "shell",
            json!({"command": "git status > status.txt", "workdir": "out"})
        )
        .0,
        Allow
    );
}

#[test]
fn path_rule_table() {
    // (rule, tool, path, matches)
    let table: &[(&str, &str, &str, bool)] = &[
        ("Read(src/**/*.rs)", "read_file", "src/main.rs", true),
        ("Read(src/**/*.rs)", "read_file", "src/a/b/c.rs", true),
        ("Read(src/**/*.rs)", "read_file", "src/main.py", false),
        ("Read(src/**/*.rs)", "read_file", "tests/x.rs", false),
        ("Read(src/**/*.rs)", "read_file", "./src/../src/x.rs", true),
        (
            "Read(src/**/*.rs)",
            "read_file",
            "/work/repo/src/x.rs",
            true,
        ),
        (
            "Read(src/**/*.rs)",
            "read_file",
            "/elsewhere/src/x.rs",
            false,
        ),
        ("Read(*.md)", "read_file", "README.md", true),
        ("Read(*.md)", "read_file", "docs/guide.md", false),
        ("Read(**/*.md)", "read_file", "docs/guide.md", true),
        ("Read(/etc/**)", "read_file", "/etc/passwd", true),
        ("Read(/etc/**)", "read_file", "../../etc/passwd", true),
        ("Read(//etc/hosts)", "read_file", "/etc/hosts", true),
        ("Read", "read_file", "anything", true),
        ("Read(src/**)", "grep", "src", false),
        ("Read(src/**)", "grep", "src/x", true),
        ("Read(src/**)", "write_file", "src/x", false),
        ("Write(src/**)", "write_file", "src/x.rs", true),
        ("Write(src/**)", "edit_file", "src/x.rs", true),
        ("Edit(src/**)", "write_file", "src/x.rs", true),
        ("Edit(src/**)", "read_file", "src/x.rs", false),
        ("Grep", "grep", "", true),
        ("Grep", "glob", "", false),
        ("Glob", "glob", "", true),
        ("LS", "list_dir", "", true),
        ("LS(src)", "list_dir", "src", true),
        ("LS(src)", "list_dir", "", false),
        ("read_file(src/*)", "read_file", "src/a", true),
    ];
    for (rule, tool, path, expected) in table {
        let r = rules(&[rule], &[], &[], Ask);
        let args = if path.is_empty() {
            json!({"pattern": "x"})
        } else {
            json!({"path": path, "pattern": "x", "content": ""})
        };
        let want = if *expected { Allow } else { Ask };
        assert_eq!(check(&r, tool, args).0, want, "{rule} vs {tool} {path}");
    }
}

#[test]
fn mcp_rule_table() {
    let table: &[(&str, &str, bool)] = &[
        (
            "mcp__github__create_issue",
            "mcp__github__create_issue",
            true,
        ),
        (
            "mcp__github__create_issue",
            "mcp__github__delete_repo",
            false,
        ),
        ("mcp__github__*", "mcp__github__delete_repo", true),
        ("mcp__github__*", "mcp__gitlab__x", false),
        ("mcp__github", "mcp__github__anything", true),
        ("mcp__git", "mcp__github__anything", false),
        ("mcp__*", "mcp__any__thing", true),
        ("todo_write", "todo_write", true),
        ("Bash", "mcp__x__bash", false),
    ];
    for (rule, tool, expected) in table {
        let r = rules(&[rule], &[], &[], Ask);
        let want = if *expected { Allow } else { Ask };
        assert_eq!(check(&r, tool, json!({})).0, want, "{rule} vs {tool}");
    }
}

#[test]
fn precedence_deny_over_ask_over_allow_over_default() {
    let r = rules(
        &["Bash(git:*)"],
        &["Bash(git push:*)"],
        &["Bash(git push --force:*)"],
        Deny,
    );
    assert_eq!(sh(&r, "git status"), Allow);
    assert_eq!(sh(&r, "git push origin main"), Ask);
    assert_eq!(sh(&r, "git push --force origin"), Deny);
    assert_eq!(sh(&r, "ls"), Deny, "default");
    // The same rule in every list: deny wins.
    let r = rules(&["Bash(ls:*)"], &["Bash(ls:*)"], &["Bash(ls:*)"], Allow);
    assert_eq!(sh(&r, "ls"), Deny);
    // Matched rules are reported for the winning decision.
    let r = rules(&["Bash(git:*)"], &["Bash(git push:*)"], &[], Allow);
    assert_eq!(
        check(&r, "shell", json!({"command": "git status && git push"})),
        (Ask, vec!["Bash(git push:*)".to_string()])
    );
    assert_eq!(
        check(&r, "shell", json!({"command": "git status"})),
        (Allow, vec!["Bash(git:*)".to_string()])
    );
    // Compound: one denied part denies, one asked part asks.
    let r = rules(&["Bash(ls:*)"], &["Bash(make:*)"], &["Bash(rm:*)"], Allow);
    assert_eq!(sh(&r, "ls && make && rm x"), Deny);
    assert_eq!(sh(&r, "ls && make"), Ask);
}

#[test]
fn disabled_rules_allow_everything_with_no_rule() {
    let mut r = rules(&[], &[], &["Bash"], Deny);
    r.enabled = false;
    assert_eq!(
        check(&r, "shell", json!({"command": "rm -rf /"})),
        (Allow, vec![])
    );
}

#[test]
fn unparsable_commands_need_the_strictest_decision() {
    // Default allow plus a deny list: what cannot be checked against the
    // deny list asks.
    let r = rules(&[], &[], &["Bash(rm:*)"], Allow);
    assert_eq!(sh(&r, "$CMD -rf /"), Ask);
    assert_eq!(sh(&r, "echo 'unterminated"), Ask);
    assert_eq!(sh(&r, "bash -c \"$SCRIPT\""), Ask);
    // Default deny: denied.
    let r = rules(&["Bash(echo:*)"], &[], &[], Deny);
    assert_eq!(sh(&r, "echo $((1+1))"), Deny);
    // A tool-wide allow with no narrower deny/ask: the user allowed all shell.
    let r = rules(&["Bash"], &[], &[], Deny);
    assert_eq!(sh(&r, "$CMD"), Allow);
    // ... but not when a narrower deny could be dodged.
    let r = rules(&["Bash"], &[], &["Bash(rm:*)"], Allow);
    assert_eq!(sh(&r, "$CMD"), Ask);
    // A tool-wide deny denies even what cannot be parsed.
    let r = rules(&[], &[], &["Bash"], Allow);
    assert_eq!(sh(&r, "echo 'unterminated"), Deny);
}

#[test]
fn invalid_rules_fail_closed() {
    let r = rules(&["Bash(ls"], &[], &[], Ask);
    assert_eq!(sh(&r, "ls"), Ask, "invalid allow allows nothing");
    let r = rules(&[], &[], &["Read([)"], Allow);
    assert_eq!(check(&r, "read_file", json!({"path": "x"})).0, Deny);
    assert_eq!(check(&r, "write_file", json!({"path": "x"})).0, Allow);
    assert_eq!(
        validate_rules(&rules(&["Bash(ls"], &["Read([)"], &["ok"], Allow)).len(),
        2
    );
}

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

// ---- decide ------------------------------------------------------------

fn decide_on(policy: &ThreadPolicy, grants: &SessionGrants, tool: &str, args: Value) -> Verdict {
    decide(
        policy,
        grants,
        &ToolRequest {
            tool,
            args: &args,
            workspace: Path::new(WS),
        },
    )
}

fn shell_verdict(policy: &ThreadPolicy, command: &str) -> Verdict {
    decide_on(
        policy,
        &SessionGrants::default(),
        "shell",
        json!({ "command": command }),
    )
}

fn is_ask(v: &Verdict) -> bool {
    matches!(v, Verdict::Ask { .. })
}

fn is_deny(v: &Verdict) -> bool {
    matches!(v, Verdict::Deny { .. })
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
    assert!(gantry_core::policy::asks_on_failure(&p));
    assert!(!gantry_core::policy::asks_on_failure(
        &ThreadPolicy::default()
    ));
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
fn expansions_that_make_words_are_not_static() {
    let r = rules(&["Bash(echo:*)", "Bash(ls:*)"], &[], &["Bash(rm:*)"], Ask);
    for command in [
        "{rm,-rf,/}",
        "/???/r? -rf /",
        "/bin/r[m] x",
        "echo hi; {rm,x}",
    ] {
        assert_eq!(sh(&r, command), Ask, "{command}");
    }
    // Globs and braces in arguments are fine for prefix rules.
    assert_eq!(sh(&r, "ls *.rs {a,b}"), Allow);
    let p = ThreadPolicy {
        approval: ApprovalPolicy::Untrusted,
        ..ThreadPolicy::default()
    };
    assert!(is_ask(&shell_verdict(&p, "find . {-delete,-print}")));
    assert!(is_ask(&shell_verdict(&p, "find . -*")));
    assert_eq!(shell_verdict(&p, "ls src/*.rs"), Verdict::Allow);
}

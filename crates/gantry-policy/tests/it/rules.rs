//! Permission rule matching tables, adversarial compound shell commands,
//! rule syntax, and how the rules of each list combine.

use std::path::Path;

use gantry_policy::rules::{glob_matches, normalize};
use gantry_policy::{Rule, Verdict, validate_rules};
use gantry_types::{ApprovalPolicy, RuleDecision, ThreadPolicy};
use serde_json::json;

use crate::support::{check, is_ask, rules, sh, shell_verdict};
use RuleDecision::{Allow, Ask, Deny};

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

#[test]
fn wildcard_basics() {
    assert!(glob_matches("npm run test *", "npm run test"));
    assert!(glob_matches("npm run test *", "npm run test --watch"));
    assert!(!glob_matches("npm run test *", "npm run testx"));
    assert!(glob_matches("git * --oneline", "git log -5 --oneline"));
    assert!(!glob_matches("ls", "lsof"));
    assert!(glob_matches("*", ""));
}

#[test]
fn parse_errors() {
    assert!(Rule::parse("Bash(").is_err());
    assert!(Rule::parse("Read([)").is_err());
    assert!(Rule::parse("mcp__x__y(z)").is_err());
    assert!(Rule::parse("Bad Name").is_err());
    assert!(Rule::parse("Read(~/.ssh/**)").is_err());
    assert!(Rule::parse("Bash(cargo:*)").is_ok());
}

#[test]
fn normalize_is_lexical() {
    let ws = Path::new("/ws");
    assert_eq!(normalize(ws, Path::new("a/../b/./c")), Path::new("/ws/b/c"));
    assert_eq!(normalize(ws, Path::new("../../etc")), Path::new("/etc"));
    assert_eq!(normalize(ws, Path::new("/x/y")), Path::new("/x/y"));
}

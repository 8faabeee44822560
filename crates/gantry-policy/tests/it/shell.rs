//! How a command line splits into parts: lists, pipelines, quotes,
//! substitutions, redirections, wrappers, and what stays opaque.

use gantry_policy::shell::{ShellPart, analyze};

fn commands(src: &str) -> Vec<String> {
    analyze(src)
        .parts
        .iter()
        .map(|p| match p {
            ShellPart::Command(c) => c.text(),
            ShellPart::Write(Some(p)) => format!("> {p}"),
            ShellPart::Write(None) => "> ?".into(),
            ShellPart::Opaque(_) => "?".into(),
        })
        .collect()
}

#[test]
fn lists_and_pipelines_split() {
    assert_eq!(commands("git status; rm -rf ~"), ["git status", "rm -rf ~"]);
    assert_eq!(commands("a && b || c | d & e"), ["a", "b", "c", "d", "e"]);
    assert_eq!(commands("a\nb"), ["a", "b"]);
}

#[test]
fn quotes_are_removed() {
    assert_eq!(commands(r#"'rm' -rf "x y""#), ["rm -rf x y"]);
    assert_eq!(commands(r"\rm -rf /"), ["rm -rf /"]);
    assert_eq!(commands(r#"r''m x"#), ["rm x"]);
}

#[test]
fn substitutions_are_parts() {
    assert_eq!(
        commands("echo $(rm -rf /)"),
        ["rm -rf /", "echo $(rm -rf /)"]
    );
    assert_eq!(commands("echo `rm -rf /`"), ["rm -rf /", "echo `rm -rf /`"]);
    assert_eq!(commands("diff <(rm a) b"), ["rm a", "diff b"]);
    assert_eq!(commands("echo \"$(rm x)\""), ["rm x", "echo \"$(rm x)\""]);
}

#[test]
fn redirections_are_writes() {
    assert_eq!(
        commands("git status > /etc/passwd"),
        ["> /etc/passwd", "git status"]
    );
    assert_eq!(commands("ls 2>/dev/null >&2"), ["ls"]);
    assert_eq!(commands("ls > $OUT"), ["> ?", "ls"]);
    assert_eq!(commands("ls &> log"), ["> log", "ls"]);
}

#[test]
fn wrappers_expose_inner_commands() {
    assert_eq!(
        commands("bash -c 'rm -rf /'"),
        ["rm -rf /", "bash -c rm -rf /"]
    );
    assert_eq!(commands("eval \"rm -rf /\""), ["rm -rf /", "eval rm -rf /"]);
    assert_eq!(commands("env A=1 rm x"), ["A=1 rm x", "env A=1 rm x"]);
    assert_eq!(commands("xargs rm"), ["rm", "xargs rm"]);
    assert_eq!(
        commands("find . -exec rm {} \\;"),
        ["rm {}", "find . -exec rm {} ;"]
    );
    assert_eq!(commands("timeout 5 rm x"), ["rm x", "timeout 5 rm x"]);
    assert_eq!(commands("sudo -u root rm x"), ["rm x", "sudo -u root rm x"]);
    // Options missing their value must not index past the end.
    for cmd in [
        "sudo -u",
        "timeout -s",
        "watch -n",
        "nice -n",
        "env -u",
        "xargs -I",
    ] {
        assert_eq!(commands(cmd).last().map(String::as_str), Some(cmd));
    }
}

#[test]
fn unprovable_is_opaque() {
    assert!(analyze("$CMD x").has_opaque());
    assert!(analyze("echo $((1+2))").has_opaque());
    assert!(analyze("bash -c \"$X\"").has_opaque());
    assert!(analyze("echo 'unterminated").has_opaque());
    assert!(analyze("cat <<EOF\n$(rm -rf /)\nEOF\n").has_opaque());
    assert!(!analyze("cat <<'EOF'\n$(rm -rf /)\nEOF\n").has_opaque());
    let deep = format!("{}x{}", "(".repeat(500), ")".repeat(500));
    assert!(analyze(&deep).has_opaque());
}

#[test]
fn cd_is_noticed() {
    assert!(analyze("cd /etc && echo x > passwd").changes_dir);
    assert!(!analyze("echo x > passwd").changes_dir);
}

/// The parser is third-party code and release builds abort on panic:
/// make sure hostile input of shell punctuation does not panic it.
#[test]
fn random_input_never_panics() {
    let alphabet: Vec<char> = "ab $(){}[]'\"`\\;|&<>\n#=*?~!-019cdEOF".chars().collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..5000 {
        let len = (next() % 24) as usize;
        let s: String = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let r = std::panic::catch_unwind(|| analyze(&s));
        assert!(r.is_ok(), "panic on {s:?}");
    }
}

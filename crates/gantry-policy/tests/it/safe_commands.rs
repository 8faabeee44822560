//! What the `untrusted` approval policy runs without asking.

use gantry_policy::safe_commands::is_safe_command_line;
use gantry_policy::shell::analyze;

fn safe(src: &str) -> bool {
    is_safe_command_line(&analyze(src))
}

#[test]
fn read_only_commands_are_safe() {
    for cmd in [
        "ls -la",
        "cat src/main.rs",
        "git status",
        "git log --oneline -5 | head -3",
        "git diff HEAD~1",
        "rg -n foo src",
        "find . -name '*.rs'",
        "sed -n 1,20p file.txt",
        "pwd && echo hi",
        "wc -l $(ls)",
        "timeout 5 ls",
        "bash -c 'ls -la'",
        "ls 2>/dev/null",
        "busybox ls -la",
        "nice -n 5 ls",
    ] {
        // `wc -l $(ls)`: `ls` is a part, `wc -l $(ls)` has a dynamic word.
        let expected = cmd != "wc -l $(ls)";
        assert_eq!(safe(cmd), expected, "{cmd}");
    }
}

#[test]
fn writing_or_executing_commands_are_not() {
    for cmd in [
        "rm -rf x",
        "ls > out.txt",
        "find . -delete",
        "find . -exec rm {} +",
        "rg --pre sh foo",
        "sort -o out in",
        "sed -i s/a/b/ f",
        "git -c alias.st='!rm x' st",
        "git diff --output=x",
        "git push",
        "git branch -D main",
        "FOO=1 ls",
        "/tmp/ls",
        "$X",
        "ls; rm x",
        "echo $((1+1))",
        "xargs ls",
        // Wrappers that write files or change the user are not safe.
        "flock /tmp/l ls",
        "su -c ls",
        "strace -o out ls",
        "echo ls | bash",
        "",
    ] {
        assert!(!safe(cmd), "{cmd}");
    }
}

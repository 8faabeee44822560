//! Deny rules see through the programs that run another command: `su -c`,
//! `script -c`, `flock`, `chroot`, `strace`, `ionice`, `taskset`,
//! `parallel`, `busybox` and the rest. What cannot be taken apart asks
//! instead of being allowed. Also which command each wrapper runs, and
//! which wrappers move relative paths.

use gantry_policy::shell::{ShellPart, analyze};
use gantry_types::RuleDecision;

use crate::support::{rules, sh};
use RuleDecision::{Allow, Ask, Deny};

/// Ways to run `rm` behind another program. Under "all shell allowed,
/// except `rm`" each must be denied, or asked where the command it runs
/// cannot be known before it runs.
const WAYS_TO_RUN_RM: &[(&str, RuleDecision)] = &[
    // su: `-c` takes a shell string; options may follow the user.
    ("su -c 'rm -rf /'", Deny),
    ("su root -c 'rm -rf /'", Deny),
    ("su - root -c \"rm x\"", Deny),
    ("su - -c 'rm x'", Deny),
    ("su -l -c 'rm x' root", Deny),
    ("su --command='rm x'", Deny),
    ("su -s /bin/sh -c 'rm x' nobody", Deny),
    ("su -c \"$CMD\"", Ask),
    ("echo 'rm x' | su", Ask),
    ("runuser -u nobody -- rm x", Deny),
    ("runuser -l nobody -c 'rm x'", Deny),
    // script: `-c CMD [file]`, or BSD's `script [-q] file cmd...`.
    ("script -qc \"rm -rf x\" /dev/null", Deny),
    ("script -q -c 'rm x'", Deny),
    ("script --command 'rm x' /dev/null", Deny),
    ("script -q /dev/null rm x", Deny),
    ("echo 'rm x' | script -q /dev/null", Ask),
    // flock: `FILE CMD...` or `FILE -c CMD`.
    ("flock /tmp/l rm x", Deny),
    ("flock -n -w 5 /tmp/l rm x", Deny),
    ("flock /tmp/l -c 'rm x'", Deny),
    ("flock -x /tmp/l --command 'rm x'", Deny),
    ("flock /tmp/l -c \"$X\"", Ask),
    // chroot: `[opts] DIR CMD...`; no command runs a shell on stdin.
    ("chroot / rm x", Deny),
    ("chroot --userspec=1000:1000 / rm x", Deny),
    ("chroot --userspec 1000 / rm x", Deny),
    ("echo 'rm x' | chroot /", Ask),
    // Tracers.
    ("strace -f -o /dev/null rm x", Deny),
    ("strace -e trace=unlink -s 100 rm x", Deny),
    ("strace -fo/dev/null rm x", Deny),
    ("strace --output=/dev/null --follow-forks rm x", Deny),
    ("strace --frobnicate rm x", Ask),
    ("ltrace -o /dev/null rm x", Deny),
    // Schedulers.
    ("ionice -c3 rm x", Deny),
    ("ionice -c 2 -n 7 -t rm x", Deny),
    ("taskset -c 0 rm x", Deny),
    ("taskset 0x1 rm x", Deny),
    ("chrt -f 10 rm x", Deny),
    ("nice -n 5 rm x", Deny),
    ("nice -5 rm x", Deny),
    ("nice --adjustment=5 rm x", Deny),
    // parallel: the command is a shell string; without one, the inputs are.
    ("parallel rm ::: a b", Deny),
    ("parallel 'rm {}' ::: a b", Deny),
    ("parallel -j2 -k rm {} ::: a", Deny),
    ("parallel ::: 'rm x' 'ls'", Deny),
    ("ls | parallel rm", Deny),
    ("cat cmds.txt | parallel", Ask),
    ("parallel :::: cmds.txt", Ask),
    ("parallel --arg-sep ,, rm ,, a", Ask),
    // busybox and toybox: the applet is the command.
    ("busybox rm x", Deny),
    ("busybox sh -c 'rm x'", Deny),
    ("toybox rm x", Deny),
    ("busybox sh -c \"$X\"", Ask),
    ("busybox $APPLET x", Ask),
    // Unparseable shell strings.
    ("busybox sh -c 'rm \"x'", Ask),
    ("su -c 'rm \"x'", Ask),
    // Nested.
    ("sudo timeout 5 busybox rm -rf x", Deny),
    (
        "nice ionice -c3 taskset -c 0 flock /tmp/l strace -f rm x",
        Deny,
    ),
    ("su -c \"sudo -u root busybox sh -c 'rm x'\"", Deny),
    ("xargs busybox rm < list", Deny),
    ("parallel busybox rm ::: a", Deny),
    ("find . -exec flock /tmp/l rm {} \\;", Deny),
    // The wrappers that were handled before, and their options.
    ("env -i rm x", Deny),
    ("env -S 'rm -rf x'", Deny),
    ("env -S \"$X\"", Ask),
    ("nohup rm x", Deny),
    ("timeout -s KILL 5 rm x", Deny),
    ("timeout --sig KILL 5 rm x", Ask),
    ("stdbuf -oL rm x", Deny),
    ("stdbuf --output L rm x", Deny),
    ("setsid -f rm x", Deny),
    ("time -p rm x", Deny),
    ("/usr/bin/time -o /dev/null rm x", Deny),
    ("command -p rm x", Deny),
    ("exec -a foo rm x", Deny),
    ("watch -n 1 rm x", Deny),
    ("watch -d rm x", Deny),
    ("sudo rm x", Deny),
    ("sudo --user root rm x", Deny),
    ("sudo -E -u root -- rm x", Deny),
    ("sudo FOO=1 rm x", Deny),
    ("echo 'rm x' | sudo -s", Ask),
    ("sudo $CMD x", Ask),
    ("doas -u root rm x", Deny),
    ("pkexec --user root rm x", Deny),
    ("sg wheel 'rm x'", Deny),
    ("sg wheel -c 'rm x'", Deny),
    ("unshare -r rm x", Deny),
    ("unshare --mount --fork rm x", Deny),
    ("nsenter -t 1 -m rm x", Deny),
    ("fakeroot rm x", Deny),
    ("bash -c 'rm x'", Deny),
    ("sh -c 'rm x'", Deny),
    ("zsh -c 'rm x'", Deny),
    ("dash -c 'rm x'", Deny),
    ("bash --rcfile /dev/null -c 'rm x'", Deny),
    ("echo 'rm x' | bash", Ask),
    ("eval rm x", Deny),
    ("trap 'rm x' EXIT", Deny),
    ("find . -exec rm {} \\;", Deny),
    ("find . -execdir rm {} +", Deny),
    ("find . -ok rm {} \\;", Deny),
    ("xargs -0 -I{} rm {}", Deny),
    // Less common runners.
    ("firejail --noprofile rm x", Deny),
    ("valgrind --leak-check=full rm x", Deny),
    ("unbuffer rm x", Deny),
    ("proxychains4 -q rm x", Deny),
    ("torsocks rm x", Deny),
    ("xvfb-run -a rm x", Deny),
    ("setpriv --reuid=1000 rm x", Deny),
    ("prlimit --nofile=10 rm x", Deny),
    ("catchsegv rm x", Deny),
    // A command only known at run time.
    ("$CMD rm x", Ask),
    ("nice -n 5 $CMD", Ask),
];

#[test]
fn deny_rules_see_through_command_wrappers() {
    let all_but_rm = rules(&["Bash"], &[], &["Bash(rm:*)"], Allow);
    let only_deny = rules(&[], &[], &["Bash(rm:*)"], Allow);
    let mut wrong = Vec::new();
    for (command, want) in WAYS_TO_RUN_RM {
        for r in [&all_but_rm, &only_deny] {
            let got = sh(r, command);
            if got != *want {
                wrong.push(format!("{command:?}: {got:?}, want {want:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(WAYS_TO_RUN_RM.len() >= 50);
}

/// What the wrappers run is judged on its own: a narrow allow rule set
/// still allows what it names, behind harmless wrappers too.
#[test]
fn benign_commands_are_not_affected() {
    let r = rules(
        &[
            "Bash(cargo:*)",
            "Bash(ls:*)",
            "Bash(git status:*)",
            "Bash(git rm:*)",
            "Bash(flock:*)",
            "Bash(strace:*)",
        ],
        &[],
        &["Bash(rm:*)"],
        Ask,
    );
    for command in [
        "cargo test",
        "ls -la",
        "git status",
        "git rm --cached x",
        "flock /tmp/l cargo build",
        "flock /tmp/l -c 'cargo build'",
        "nice -n 5 cargo build",
        "timeout 60 cargo test",
        "ionice -c3 cargo build",
        "taskset -c 0 cargo test",
        "busybox ls -la",
        "strace -f -o /dev/null ls",
    ] {
        assert_eq!(sh(&r, command), Allow, "{command}");
    }
    // The wrapper needs its own allow rule unless it only runs the command
    // (`nice`, `timeout`) or is the command (`busybox`).
    assert_eq!(sh(&r, "chroot / ls"), Ask);
    assert_eq!(sh(&r, "flock /tmp/l make"), Ask);
    let all_but_rm = rules(&["Bash"], &[], &["Bash(rm:*)"], Allow);
    for command in [
        "cargo test",
        "git rm --cached x",
        "echo rm",
        "man rm",
        "command -v rm",
        "flock /tmp/l cargo build",
        "strace -p 1234",
        "ionice -p 1234",
        "taskset -p 1234",
        "busybox --list",
        "bash scripts/test.sh",
        "parallel gzip ::: a b",
    ] {
        assert_eq!(sh(&all_but_rm, command), Allow, "{command}");
    }
}

/// The commands a line runs, innermost first; `?` for opaque parts.
fn commands(src: &str) -> Vec<String> {
    analyze(src)
        .parts
        .iter()
        .filter_map(|p| match p {
            ShellPart::Command(c) => Some(c.text()),
            ShellPart::Opaque(_) => Some("?".into()),
            ShellPart::Write(_) => None,
        })
        .collect()
}

fn inner(src: &str) -> String {
    commands(src).into_iter().next().unwrap_or_default()
}

#[test]
fn the_wrapped_command_is_found() {
    for (line, want) in [
        ("su -c 'rm -rf /'", "rm -rf /"),
        ("su - root -c 'rm x'", "rm x"),
        ("su root -lc 'rm x'", "rm x"),
        ("runuser -u nobody -- rm x", "rm x"),
        ("script -qc 'rm x' /dev/null", "rm x"),
        ("script -q /dev/null rm x", "rm x"),
        ("flock -w 5 /tmp/l rm x", "rm x"),
        ("flock /tmp/l -c 'rm x'", "rm x"),
        ("chroot --userspec 1:1 / rm x", "rm x"),
        ("strace -fo /dev/null -e trace=all rm x", "rm x"),
        ("ionice -c 3 -n7 rm x", "rm x"),
        ("taskset -ac 0-3 rm x", "rm x"),
        ("chrt -r 5 rm x", "rm x"),
        ("parallel -j4 'rm {}' ::: a b", "rm {}"),
        ("parallel ::: 'rm x'", "rm x"),
        ("busybox rm x", "rm x"),
        ("nice -n 5 rm x", "rm x"),
        ("nice -5 rm x", "rm x"),
        ("stdbuf --output L rm x", "rm x"),
        ("sudo --user root FOO=1 rm x", "FOO=1 rm x"),
        ("env -S 'FOO=1 rm x'", "FOO=1 rm x"),
        ("watch -d rm x", "rm x"),
        ("trap 'rm x' EXIT", "rm x"),
        ("sg wheel -c 'rm x'", "rm x"),
        ("nsenter -t 1 -m rm x", "rm x"),
        ("unshare -rf --mount-proc rm x", "rm x"),
        ("sudo timeout 5 busybox rm -rf x", "rm -rf x"),
    ] {
        assert_eq!(inner(line), want, "{line}");
    }
}

#[test]
fn what_cannot_be_taken_apart_is_opaque() {
    for line in [
        "su -c \"$X\"",
        "su",
        "sudo -s",
        "sudo -i",
        "chroot /",
        "unshare -r",
        "cat cmds | parallel",
        "parallel -a cmds",
        "parallel :::: cmds",
        "flock /tmp/l -c \"$X\"",
        "strace --unknown-option rm x",
        "timeout --sig KILL 5 rm x",
        "nice -n 5 $CMD",
        "busybox sh -c \"$X\"",
        "echo rm x | bash",
        "bash -s",
        "script -q /dev/null",
        "script /dev/null -c 'rm x'",
    ] {
        assert!(analyze(line).has_opaque(), "{line}");
    }
}

#[test]
fn what_runs_nothing_is_not_opaque() {
    for line in [
        "strace -p 1",
        "ionice -p 1",
        "taskset -p 1",
        "chrt -p 1",
        "flock 9",
        "sudo -v",
        "sudo -l",
        "busybox --list",
        "bash --version",
        "bash x.sh",
        "command -v rm",
        "trap - EXIT",
        "timeout 5",
    ] {
        assert!(!analyze(line).has_opaque(), "{line}");
    }
}

#[test]
fn a_login_or_new_root_moves_relative_paths() {
    assert!(analyze("su - -c 'echo x > .bashrc'").changes_dir);
    assert!(analyze("chroot /srv sh -c 'echo x > f'").changes_dir);
    assert!(analyze("sudo -D /etc tee passwd").changes_dir);
    assert!(!analyze("flock /tmp/l -c 'echo x > f'").changes_dir);
}

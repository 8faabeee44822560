//! What the installed binary shows a newcomer: `gantry --help` groups the
//! commands with an example each, and `gantry completions` prints scripts
//! the shells accept. (The grouping's completeness and the examples'
//! parsing are unit tests of the binary: src/help.rs.)

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::{Scratch, stderr, stdout};

#[test]
fn help_groups_the_commands_with_an_example_each() {
    let s = Scratch::new();
    for flag in ["--help", "-h"] {
        let out = s.run(&[flag]);
        assert!(out.status.success(), "{}", stderr(&out));
        let help = stdout(&out);
        for heading in ["Run an agent:", "Serve protocols:", "Manage:", "Options:"] {
            assert!(help.contains(&format!("\n{heading}\n")), "{flag}: {help}");
        }
        assert!(
            help.contains("\n  exec  ") && help.contains("\n                 $ gantry exec "),
            "{flag}: {help}"
        );
    }
    // Without a command, the same grouped help, as a usage error.
    let out = s.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("\nServe protocols:\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bash_accepts_the_completions_and_they_name_commands_and_flags() {
    let s = Scratch::new();
    let out = s.run(&["completions", "bash"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let script = stdout(&out);
    for word in ["exec", "threads", "completions", "--model", "--http-addr"] {
        assert!(script.contains(word), "`{word}` not completed");
    }
    let mut bash = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash");
    bash.stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("write");
    let checked = bash.wait_with_output().expect("bash -n");
    assert!(checked.status.success(), "bash -n: {}", stderr(&checked));
    // Sourced into a shell, it completes gantry's commands.
    let complete = Command::new("bash")
        .arg("-c")
        .arg(
            "source /dev/stdin; COMP_WORDS=(gantry ex); COMP_CWORD=1; \
             _gantry gantry ex gantry; echo \"${COMPREPLY[@]}\"",
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut bash| {
            bash.stdin
                .take()
                .expect("stdin")
                .write_all(script.as_bytes())?;
            bash.wait_with_output()
        })
        .expect("bash");
    assert_eq!(stdout(&complete).trim(), "exec", "{}", stderr(&complete));
}

#[test]
fn every_shell_is_offered_and_an_unknown_one_is_refused() {
    let s = Scratch::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = s.run(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        assert!(stdout(&out).contains("gantry"), "{shell}");
    }
    let out = s.run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("[possible values: bash, elvish, fish, powershell, zsh]"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn switches_from_the_environment_take_what_people_write() {
    let s = Scratch::new();
    for (value, ok) in [
        ("1", true),
        ("yes", true),
        ("on", true),
        ("true", true),
        ("0", true),
        ("maybe", false),
    ] {
        let out = s
            .gantry()
            .env("GANTRY_NO_SHELL_SNAPSHOT", value)
            .args(["threads", "list"])
            .output()
            .expect("gantry runs");
        assert_eq!(
            out.status.success(),
            ok,
            "GANTRY_NO_SHELL_SNAPSHOT={value}: {}",
            stderr(&out)
        );
    }
}

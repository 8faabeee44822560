//! `SandboxPolicy::protected`: the engine's data dir kept from sandboxed
//! commands, around the workspaces and skills that live inside it; and the
//! runtime's own process kept out of reach.
//!
//! Directories live outside the system temp dir (a default writable root),
//! as in `sandbox.rs`. Skipped, with a note, where the sandbox cannot be
//! enforced.

use crate::common;

use std::path::Path;

use common::ctx;
use gantry_tools::{SandboxPolicy, SandboxSupport, ShellTool, Tool, ToolContext, ToolStatus};
use gantry_types::{ItemKind, SandboxMode};
use serde_json::json;

fn enforceable(test: &str) -> bool {
    match SandboxSupport::probe().problem {
        None => true,
        Some(reason) => {
            eprintln!("SKIPPED {test}: the sandbox cannot be enforced on this machine: {reason}");
            false
        }
    }
}

/// Runs `command`; returns whether it exited 0, and its output.
async fn sh(c: &ToolContext, command: &str) -> (bool, String) {
    let out = ShellTool
        .run(json!({ "command": command }), c.clone())
        .await;
    assert_eq!(
        out.status,
        ToolStatus::Ok,
        "{command}: {}",
        out.model_output
    );
    match out.item {
        ItemKind::CommandExecution {
            output, exit_code, ..
        } => (exit_code == Some(0), output),
        other => panic!("expected CommandExecution, got {other:?}"),
    }
}

fn denied(run: &(bool, String), what: &str) {
    assert!(!run.0, "{what} should fail: {}", run.1);
    assert!(run.1.contains("Permission denied"), "{what}: {}", run.1);
}

fn allowed(run: &(bool, String), what: &str) {
    assert!(run.0, "{what} should work: {}", run.1);
}

fn q(p: &Path) -> String {
    format!("'{}'", p.display())
}

/// A data dir laid out like a runner's: database, key, two threads'
/// workspaces, an agent's skills.
fn data_dir() -> tempfile::TempDir {
    let data = gantry_testkit::process::dir_outside_temp().unwrap();
    let d = data.path();
    std::fs::write(d.join("gantry.db"), "DBSECRET").unwrap();
    std::fs::write(d.join("secret.key"), "KEYSECRET").unwrap();
    std::fs::create_dir_all(d.join("workspaces/mine")).unwrap();
    std::fs::create_dir_all(d.join("workspaces/theirs")).unwrap();
    std::fs::write(d.join("workspaces/theirs/notes"), "THEIRS").unwrap();
    std::fs::create_dir_all(d.join("agents/a1/skills/s")).unwrap();
    std::fs::write(d.join("agents/a1/skills/s/run.sh"), "echo SKILL").unwrap();
    data
}

fn policy(mode: SandboxMode, ws: &Path, data: &Path) -> ToolContext {
    let mut c = ctx(ws);
    c.sandbox = SandboxPolicy::new(mode, &c.workspace);
    c.sandbox.protected = vec![data.to_path_buf()];
    c.sandbox.protected_readable = vec![data.join("agents")];
    c
}

#[tokio::test]
async fn the_data_dir_is_unreadable_around_the_workspace_and_skills() {
    if !enforceable("the_data_dir_is_unreadable_around_the_workspace_and_skills") {
        return;
    }
    let data = data_dir();
    let d = data.path();
    let ws = d.join("workspaces/mine");
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let c = policy(mode, &ws, d);
        let db = sh(&c, &format!("cat {}", q(&d.join("gantry.db")))).await;
        denied(&db, "read the database");
        assert!(!db.1.contains("DBSECRET"));
        denied(
            &sh(&c, &format!("cat {}", q(&d.join("secret.key")))).await,
            "read the key",
        );
        denied(
            &sh(&c, "cat ../theirs/notes").await,
            "read another thread's workspace",
        );
        let skill = sh(
            &c,
            &format!("sh {}", q(&d.join("agents/a1/skills/s/run.sh"))),
        )
        .await;
        allowed(&skill, "run an installed skill's script");
        assert!(skill.1.contains("SKILL"));
    }
    let c = policy(SandboxMode::WorkspaceWrite, &ws, d);
    allowed(
        &sh(&c, "echo hi > f && cat f && ls").await,
        "work in the workspace",
    );
    let c = policy(SandboxMode::ReadOnly, &ws, d);
    allowed(&sh(&c, "cat f").await, "read the workspace under read-only");
}

#[tokio::test]
async fn the_data_dir_is_unreadable_from_a_workspace_elsewhere() {
    if !enforceable("the_data_dir_is_unreadable_from_a_workspace_elsewhere") {
        return;
    }
    let data = data_dir();
    let ws = gantry_testkit::process::dir_outside_temp().unwrap();
    let c = policy(SandboxMode::WorkspaceWrite, ws.path(), data.path());
    let run = sh(&c, &format!("cat {}", q(&data.path().join("gantry.db")))).await;
    denied(&run, "read the database");
    let run = sh(&c, &format!("cp -r {} copy", q(data.path()))).await;
    assert!(!run.0, "copying the data dir should fail: {}", run.1);
    allowed(&sh(&c, "echo ok > f").await, "write the workspace");
}

#[tokio::test]
async fn a_protected_path_inside_a_writable_root_does_not_stop_commands() {
    if !enforceable("a_protected_path_inside_a_writable_root_does_not_stop_commands") {
        return;
    }
    // Landlock cannot take back what a writable root grants: the command
    // runs instead of every command failing; in a mount namespace of its
    // own it finds the path covered, else it can read it (a warning is
    // logged).
    let ws = gantry_testkit::process::dir_outside_temp().unwrap();
    std::fs::create_dir(ws.path().join("data")).unwrap();
    std::fs::write(ws.path().join("data/gantry.db"), "DB").unwrap();
    let c = policy(
        SandboxMode::WorkspaceWrite,
        ws.path(),
        &ws.path().join("data"),
    );
    let run = sh(&c, "echo runs; cat data/gantry.db").await;
    assert!(run.1.starts_with("runs\n"), "{}", run.1);
    if SandboxSupport::probe().namespace_problem.is_none() {
        assert!(run.1.contains("No such file"), "{}", run.1);
    } else {
        allowed(&run, "read it");
    }
}

#[tokio::test]
async fn sandboxed_commands_cannot_read_the_runtimes_environment_or_memory() {
    if !enforceable("sandboxed_commands_cannot_read_the_runtimes_environment_or_memory") {
        return;
    }
    // What `gantry` does first thing; this test process stands in for it
    // (`$PPID` of `bash -lc` is the process that started it).
    nix::sys::prctl::set_dumpable(false).unwrap();
    let ws = gantry_testkit::process::dir_outside_temp().unwrap();
    let pid = std::process::id();
    let mut c = ctx(ws.path());
    c.sandbox = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &c.workspace);
    let caps = sh(&c, "grep CapBnd /proc/self/status").await;
    // Bit 19: CAP_SYS_PTRACE, dropped by the sandbox for root's commands.
    let bounding = caps.1.split_whitespace().last().unwrap_or_default();
    let bounding = u64::from_str_radix(bounding, 16).unwrap();
    assert_eq!(bounding & (1 << 19), 0, "{}", caps.1);
    if SandboxSupport::probe().namespace_problem.is_none() {
        // In a PID namespace of its own, the command's parent is outside:
        // there is no runtime to read, root or not.
        let run = sh(&c, "echo $PPID; cat /proc/$PPID/environ").await;
        assert!(run.1.starts_with("0\n"), "{}", run.1);
        assert!(!run.1.contains("PATH="), "{}", run.1);
        let run = sh(&c, &format!("head -c 1 /proc/{pid}/mem")).await;
        assert!(run.1.contains("No such file"), "{}", run.1);
        return;
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        // Measured on Linux 6.18 as root: a root command without
        // CAP_SYS_PTRACE, sandboxed or not, still opens a non-dumpable root
        // process's /proc/<pid>/environ. Only the non-root case holds.
        eprintln!(
            "SKIPPED the environ check: running as root, whose commands read a non-dumpable root \
             process's /proc files on this kernel"
        );
        return;
    }
    let run = sh(&c, "cat /proc/$PPID/environ").await;
    denied(&run, "read the runtime's environ");
    assert!(!run.1.contains("PATH="), "{}", run.1);
    denied(
        &sh(&c, &format!("head -c 1 /proc/{pid}/mem")).await,
        "read the runtime's memory",
    );
}

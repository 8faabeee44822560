//! A sandboxed command sees nothing of the runtime: its own PID namespace
//! and `/proc`, the thread's private `/tmp`, and a login profile the model
//! wrote runs no more freely than the model's commands.
//!
//! Skipped, with a note, where the sandbox or the namespaces are not to be
//! had; CI's machine has both, as root (the common case of runners in
//! containers).

use crate::common;

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::ctx;
use gantry_tools::{
    SandboxPolicy, SandboxSupport, ShellSnapshots, ShellTool, Tool, ToolContext, ToolStatus,
};
use gantry_types::{ItemKind, SandboxMode};
use serde_json::json;

fn namespaces(test: &str) -> bool {
    let support = SandboxSupport::probe();
    let problem = support.problem.or(support.namespace_problem);
    match problem {
        None => true,
        Some(reason) => {
            eprintln!("SKIPPED {test}: no sandbox with namespaces on this machine: {reason}");
            false
        }
    }
}

/// Runs `command`; its exit code and output.
async fn sh(c: &ToolContext, command: &str) -> (Option<i32>, String) {
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
        } => (exit_code, output),
        other => panic!("expected CommandExecution, got {other:?}"),
    }
}

fn q(p: &Path) -> String {
    format!("'{}'", p.display())
}

/// A context under `workspace-write` in `ws`, `data` protected as the
/// engine's data dir is, with the private temp dir `data/tmp/<thread>`.
fn thread_ctx(ws: &Path, data: &Path, thread: &str) -> ToolContext {
    let mut c = ctx(ws);
    c.sandbox = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &c.workspace);
    c.sandbox.protected = vec![data.to_path_buf()];
    c.sandbox.protected_readable = vec![data.join("agents")];
    c.sandbox.private_tmp = Some(data.join("tmp").join(thread));
    c
}

/// A data dir as the engine lays it out, under `parent`.
fn data_dir_in(parent: &Path) -> PathBuf {
    let data = parent.join("data");
    std::fs::create_dir_all(data.join("agents/a1/skills/s")).unwrap();
    std::fs::write(data.join("agents/a1/skills/s/run.sh"), "echo SKILL").unwrap();
    std::fs::write(data.join("gantry.db"), "DBSECRET").unwrap();
    std::fs::write(data.join("secret.key"), "KEYSECRET").unwrap();
    data
}

#[tokio::test]
async fn a_command_sees_only_its_own_processes_not_the_runtime() {
    if !namespaces("a_command_sees_only_its_own_processes_not_the_runtime") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let data = data_dir_in(ws.path());
    let c = thread_ctx(ws.path(), &data, "t1");
    // The runtime (this test process) is whatever ran `bash`: its parent.
    let me = std::process::id();
    let argv0 = std::env::args().next().unwrap();
    let (code, out) = sh(&c, "echo ppid=$PPID; cat /proc/$PPID/environ; echo").await;
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("ppid=0\n"), "{out}");
    // No process under /proc is the runtime, by pid or command line; only
    // the command's own are there (bash, cat, ls).
    let (_, out) = sh(&c, &format!("cat /proc/{me}/environ /proc/{me}/cmdline")).await;
    assert!(out.contains("No such file"), "{out}");
    let (_, out) = sh(&c, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '").await;
    assert!(!out.contains(&argv0), "the runtime's command line: {out}");
    let (_, out) = sh(&c, "ls /proc | grep -c '^[0-9]'").await;
    let count: u32 = out.trim().parse().unwrap();
    assert!(count <= 4, "{count} processes in view");
}

#[tokio::test]
async fn a_data_dir_under_the_temp_dir_is_invisible_and_each_thread_has_its_own_tmp() {
    if !namespaces("a_data_dir_under_the_temp_dir_is_invisible_and_each_thread_has_its_own_tmp") {
        return;
    }
    // All under the real temp dir, as in CI and containers.
    let root = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    let data = data_dir_in(&root_path);
    let ws = root_path.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let stranger = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(stranger.path(), "another user's file").unwrap();

    let one = thread_ctx(&ws, &data, "t1");
    let two = thread_ctx(&ws, &data, "t2");
    for (what, file) in [("key", "secret.key"), ("database", "gantry.db")] {
        let (code, out) = sh(&one, &format!("cat {}", q(&data.join(file)))).await;
        assert_ne!(code, Some(0), "{what}: {out}");
        assert!(!out.contains("SECRET"), "{what}: {out}");
    }
    let (code, out) = sh(&one, &format!("cat {}", q(stranger.path()))).await;
    assert_ne!(code, Some(0), "{out}");
    assert!(out.contains("No such file"), "{out}");
    // The workspace is where it was, writable; an installed skill runs.
    let (code, out) = sh(&one, "echo mine > here && cat here && pwd").await;
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out, format!("mine\n{}\n", ws.display()));
    assert_eq!(std::fs::read_to_string(ws.join("here")).unwrap(), "mine\n");
    let skill = data.join("agents/a1/skills/s/run.sh");
    let (code, out) = sh(&one, &format!("sh {}", q(&skill))).await;
    assert_eq!((code, out.as_str()), (Some(0), "SKILL\n"));
    // /tmp is the thread's own: writable, and another thread's is apart.
    let (code, out) = sh(&one, "echo one > /tmp/note && cat /tmp/note").await;
    assert_eq!((code, out.as_str()), (Some(0), "one\n"));
    let (code, out) = sh(&two, "cat /tmp/note").await;
    assert_ne!(code, Some(0), "{out}");
    assert_eq!(
        std::fs::read_to_string(data.join("tmp/t1/note")).unwrap(),
        "one\n"
    );
    // The real temp dir was not written.
    assert!(!Path::new("/tmp/note").exists());
}

#[tokio::test]
async fn a_data_dir_inside_the_workspace_is_covered() {
    if !namespaces("a_data_dir_inside_the_workspace_is_covered") {
        return;
    }
    // `gantry exec` run from `~`: the workspace holds the data dir.
    let home = gantry_testkit::process::dir_outside_temp().unwrap();
    let data = data_dir_in(&home.path().join(".local/share/gantry"));
    let c = thread_ctx(home.path(), &data, "t1");
    let (code, out) = sh(&c, &format!("cat {}/secret.key", q(&data))).await;
    assert_ne!(code, Some(0), "{out}");
    assert!(!out.contains("KEYSECRET"), "{out}");
    // Only what commands need is in it, read-only.
    let (code, out) = sh(&c, &format!("ls -A {}", q(&data))).await;
    assert_eq!((code, out.as_str()), (Some(0), "agents\n"));
    let (code, out) = sh(&c, &format!("touch {}/planted", q(&data))).await;
    assert_ne!(code, Some(0), "{out}");
    assert!(!data.join("planted").exists());
    let skill = data.join("agents/a1/skills/s/run.sh");
    let (code, out) = sh(&c, &format!("sh {}", q(&skill))).await;
    assert_eq!((code, out.as_str()), (Some(0), "SKILL\n"));
}

/// A profile the model writes (a `.bashrc` in the workspace) tries to write
/// `outside` and to connect to `port`.
fn escaping_profile(outside: &Path, port: u16) -> String {
    format!(
        "echo escaped > {out}\n\
         (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected >> {out}\n\
         export FROM_PROFILE=yes\n",
        out = q(outside)
    )
}

/// The model writes `.bashrc` in `home` (its workspace) with a sandboxed
/// command; the next command's snapshot runs it, and it must not escape.
async fn model_written_profile_stays_inside(home: &Path, data: &Path) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = gantry_testkit::process::dir_outside_temp().unwrap();
    let target = outside.path().join("escaped");

    let snapshots = Arc::new(ShellSnapshots::new(Some(&data.join("shell-snapshots"))).unwrap());
    let mut c = thread_ctx(home, data, "t1");
    c.env = Arc::new(BTreeMap::from([
        ("HOME".to_owned(), home.display().to_string()),
        ("SHELL".to_owned(), "/bin/bash".to_owned()),
    ]));
    c.shell_snapshots = Some(snapshots);
    // The first command takes a snapshot of the profile as it is.
    assert_eq!(sh(&c, "echo first").await, (Some(0), "first\n".to_owned()));
    // The model plants its profile (`write_file` in its workspace); the
    // stamp changes, so the next command takes the snapshot again.
    std::fs::write(home.join(".bashrc"), escaping_profile(&target, port)).unwrap();
    let (code, out) = sh(&c, "echo second; echo \"from=$FROM_PROFILE\"").await;
    assert_eq!(code, Some(0), "{out}");
    // It ran (its export reached the command), and nowhere it could not.
    assert!(out.ends_with("second\nfrom=yes\n"), "{out}");
    assert!(
        !target.exists(),
        "the profile wrote outside every workspace"
    );
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the profile connected out: {other:?}"),
    }
}

#[tokio::test]
async fn a_bashrc_the_model_writes_in_a_home_workspace_runs_sandboxed() {
    if !namespaces("a_bashrc_the_model_writes_in_a_home_workspace_runs_sandboxed") {
        return;
    }
    let home = gantry_testkit::process::dir_outside_temp().unwrap();
    let data = data_dir_in(&home.path().join(".local/share/gantry"));
    model_written_profile_stays_inside(home.path(), &data).await;
}

#[tokio::test]
async fn a_bashrc_the_model_writes_in_a_home_under_the_temp_dir_runs_sandboxed() {
    if !namespaces("a_bashrc_the_model_writes_in_a_home_under_the_temp_dir_runs_sandboxed") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(home.path())
        .map(|p| (home, p))
        .unwrap();
    let data = data_dir_in(&home.1.join(".local/share/gantry"));
    model_written_profile_stays_inside(&home.1, &data).await;
}

/// Language servers, MCP servers and jobs keep the runtime's rights but
/// not its `/proc`: `isolate` starts them in namespaces of their own.
#[test]
fn an_isolated_server_sees_its_own_processes_and_ends_as_its_process_does() {
    if !namespaces("an_isolated_server_sees_its_own_processes_and_ends_as_its_process_does") {
        return;
    }
    let me = std::process::id();
    let run = |script: &str| {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", script]);
        gantry_tools::sandbox::isolate(&mut cmd);
        cmd.output().unwrap()
    };
    let out = run(&format!(
        "echo $$ $PPID; cat /proc/{me}/environ 2>&1; ls /proc | grep -c '^[0-9]'"
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("1 0"), "{text}");
    assert!(
        lines.next().unwrap_or_default().contains("No such file"),
        "{text}"
    );
    let count: u32 = lines.next().unwrap_or_default().trim().parse().unwrap();
    assert!(count <= 3, "{count} processes in view: {text}");
    // Its exit code reaches the caller as it was.
    assert_eq!(run("exit 3").status.code(), Some(3));
    // Killing the process the caller holds ends the whole namespace.
    let marker = format!("isolated-{me}");
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", &format!("sleep 60; echo {marker}")]);
    gantry_tools::sandbox::isolate(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    let running = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&marker))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !running() {
        assert!(std::time::Instant::now() < deadline, "it never started");
        std::thread::yield_now();
    }
    child.kill().unwrap();
    child.wait().unwrap();
    while running() {
        assert!(
            std::time::Instant::now() < deadline,
            "it outlived its process"
        );
        std::thread::yield_now();
    }
    // A program that does not exist fails the spawn, as without namespaces.
    let mut missing = std::process::Command::new("/nonexistent/program");
    gantry_tools::sandbox::isolate(&mut missing);
    let err = missing.output().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
}

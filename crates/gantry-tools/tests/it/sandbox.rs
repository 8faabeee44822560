//! The OS sandbox, against a real bash and the real kernel.
//!
//! Every directory a test needs outside the sandbox's writable roots lives
//! under `/var/tmp` or `$HOME` (see `dir_outside_temp`), because the default
//! writable roots include the system temp dir where `tempfile` puts things.
//!
//! On a machine that cannot enforce the sandbox the enforcement tests print
//! why and skip, and `unsupported_machine_refuses_sandboxed_commands` checks
//! that commands are refused instead of run unsandboxed.

use crate::common;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use common::{canon, ctx};
use gantry_tools::{
    EditFileTool, SandboxPolicy, SandboxSupport, ShellTool, Tool, ToolContext, ToolOutput,
    ToolStatus, WriteFileTool,
};
use gantry_types::{ItemKind, SandboxMode};
use serde_json::json;
use tempfile::TempDir;

/// A directory outside the system temp dir (and so outside every default
/// writable root).
fn outside_dir() -> TempDir {
    gantry_testkit::process::dir_outside_temp().unwrap()
}

/// `true` when the sandbox can be enforced here; otherwise prints why the
/// calling test is skipped.
fn enforceable(test: &str) -> bool {
    let support = SandboxSupport::probe();
    match &support.problem {
        None => true,
        Some(reason) => {
            eprintln!("SKIPPED {test}: the sandbox cannot be enforced on this machine: {reason}");
            false
        }
    }
}

fn sandboxed(ws: &Path, mode: SandboxMode) -> ToolContext {
    let mut c = ctx(ws);
    c.sandbox = SandboxPolicy::new(mode, &c.workspace);
    c
}

struct Run {
    status: ToolStatus,
    output: String,
    exit_code: Option<i32>,
}

async fn sh(c: &ToolContext, command: &str) -> Run {
    let out: ToolOutput = ShellTool
        .run(json!({ "command": command }), c.clone())
        .await;
    match out.item {
        ItemKind::CommandExecution {
            output, exit_code, ..
        } => Run {
            status: out.status,
            output,
            exit_code,
        },
        other => panic!("expected CommandExecution, got {other:?}"),
    }
}

/// Asserts the command ran and exited 0.
fn ok(run: &Run, what: &str) {
    assert_eq!(run.status, ToolStatus::Ok, "{what}: {}", run.output);
    assert_eq!(run.exit_code, Some(0), "{what}: {}", run.output);
}

/// Asserts the command ran, failed, and said "Permission denied" (EACCES,
/// Landlock's answer) in its own output.
fn denied(run: &Run, what: &str) {
    assert_eq!(run.status, ToolStatus::Ok, "{what}: {}", run.output);
    assert_ne!(run.exit_code, Some(0), "{what} should fail: {}", run.output);
    assert!(
        run.output.contains("Permission denied"),
        "{what}: expected EACCES in the output: {}",
        run.output
    );
}

fn q(p: &Path) -> String {
    format!("'{}'", p.display())
}

#[test]
fn probe_reports_this_machine() {
    let support = SandboxSupport::probe();
    eprintln!("sandbox support here: {support:?}");
    // DEPENDENCIES.md: Landlock is enforced on the machines Gantry targets.
    // If this fails, the kernel changed; the message says what is missing.
    assert!(
        support.is_enforceable(),
        "the sandbox should be enforceable here: {:?}",
        support.problem
    );
    assert!(support.landlock_abi >= SandboxSupport::MIN_LANDLOCK_ABI);
    assert!(support.seccomp);
    assert!(support.check(SandboxMode::WorkspaceWrite).is_ok());
    assert!(support.check(SandboxMode::DangerFullAccess).is_ok());
}

#[test]
fn check_refuses_sandboxed_modes_when_unsupported() {
    let unsupported = SandboxSupport {
        landlock_abi: 0,
        seccomp: false,
        problem: Some("no Landlock".into()),
        namespace_problem: Some("no user namespaces".into()),
    };
    let err = unsupported.check(SandboxMode::ReadOnly).unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
    assert!(err.to_string().contains("no Landlock"), "{err}");
    assert!(unsupported.check(SandboxMode::WorkspaceWrite).is_err());
    // The explicit opt-out always works.
    assert!(unsupported.check(SandboxMode::DangerFullAccess).is_ok());
}

#[tokio::test]
async fn unsupported_machine_refuses_sandboxed_commands() {
    if SandboxSupport::probe().is_enforceable() {
        eprintln!("SKIPPED unsupported_machine_refuses_sandboxed_commands: the sandbox works here");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let c = sandboxed(ws.path(), SandboxMode::WorkspaceWrite);
    let run = sh(&c, "touch ran").await;
    assert_eq!(run.status, ToolStatus::Error, "{}", run.output);
    assert!(run.output.contains("cannot be enforced"), "{}", run.output);
    assert!(!ws.path().join("ran").exists(), "the command must not run");
}

#[test]
fn defaults() {
    let ws = PathBuf::from("/w");
    let p = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &ws);
    assert_eq!(p.writable_roots, vec![ws.clone(), std::env::temp_dir()]);
    assert!(p.readable_denied.is_empty());
    assert!(!p.network && !p.allows_network());
    assert!(p.is_sandboxed() && p.allows_writes());

    let p = SandboxPolicy::new(SandboxMode::ReadOnly, &ws);
    assert!(p.writable_roots.is_empty());
    assert!(!p.allows_writes());
    let p = SandboxPolicy { network: true, ..p };
    assert!(!p.allows_network(), "read-only never has network");

    let p = SandboxPolicy::new(SandboxMode::DangerFullAccess, &ws);
    assert_eq!(p, SandboxPolicy::danger_full_access());
    assert!(!p.is_sandboxed() && p.allows_network());

    // A context without a policy is not sandboxed: today's behaviour.
    let c = ToolContext::new(ws);
    assert_eq!(c.sandbox, SandboxPolicy::danger_full_access());
}

#[tokio::test]
async fn workspace_write_confines_writes_to_the_workspace_and_temp_dir() {
    if !enforceable("workspace_write_confines_writes") {
        return;
    }
    let ws = outside_dir();
    let outside = outside_dir();
    let target = outside.path().join("escaped");
    let in_tmp = tempfile::tempdir().unwrap(); // under the system temp dir
    let tmp_file = in_tmp.path().join("scratch");
    let c = sandboxed(ws.path(), SandboxMode::WorkspaceWrite);

    let run = sh(
        &c,
        "echo hi > inside.txt && mkdir -p sub/dir && mv inside.txt sub/dir/",
    )
    .await;
    ok(&run, "write in the workspace");
    assert!(ws.path().join("sub/dir/inside.txt").exists());
    ok(
        &sh(
            &c,
            &format!("echo hi > {} && cat {}", q(&tmp_file), q(&tmp_file)),
        )
        .await,
        "write in the temp dir",
    );
    assert!(tmp_file.exists());
    ok(
        &sh(&c, "echo quiet > /dev/null").await,
        "write to /dev/null",
    );

    denied(
        &sh(&c, &format!("touch {}", q(&target))).await,
        "touch outside",
    );
    assert!(!target.exists(), "nothing may be created outside");
    // Existing files outside cannot be changed or emptied either.
    let existing = outside.path().join("existing");
    std::fs::write(&existing, "keep").unwrap();
    denied(
        &sh(&c, &format!("echo x >> {}", q(&existing))).await,
        "append outside",
    );
    denied(
        &sh(&c, &format!("truncate -s 0 {}", q(&existing))).await,
        "truncate outside",
    );
    assert_ne!(
        sh(&c, &format!("rm -f {}", q(&existing))).await.exit_code,
        Some(0)
    );
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep");
    // Reading outside is fine.
    let run = sh(&c, &format!("cat {}", q(&existing))).await;
    ok(&run, "read outside");
    assert!(run.output.contains("keep"));

    // The very same command works without the sandbox.
    let free = ctx(ws.path());
    ok(
        &sh(&free, &format!("touch {}", q(&target))).await,
        "touch outside unsandboxed",
    );
    assert!(target.exists());
}

#[tokio::test]
async fn read_only_denies_even_workspace_writes() {
    if !enforceable("read_only_denies_even_workspace_writes") {
        return;
    }
    let ws = outside_dir();
    std::fs::write(ws.path().join("readme.txt"), "hello").unwrap();
    let c = sandboxed(ws.path(), SandboxMode::ReadOnly);

    denied(&sh(&c, "touch new.txt").await, "touch in the workspace");
    assert!(!ws.path().join("new.txt").exists());
    denied(
        &sh(&c, "echo x > readme.txt").await,
        "overwrite in the workspace",
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("readme.txt")).unwrap(),
        "hello"
    );
    let in_tmp = tempfile::tempdir().unwrap();
    let tmp_file = in_tmp.path().join("x");
    denied(
        &sh(&c, &format!("touch {}", q(&tmp_file))).await,
        "touch in the temp dir",
    );
    assert!(!tmp_file.exists());
    let run = sh(&c, "cat readme.txt && echo quiet > /dev/null").await;
    ok(&run, "read in the workspace");
    assert!(run.output.contains("hello"));

    let free = ctx(ws.path());
    ok(&sh(&free, "touch new.txt").await, "touch unsandboxed");
    assert!(ws.path().join("new.txt").exists());
}

#[tokio::test]
async fn denied_paths_cannot_be_read() {
    if !enforceable("denied_paths_cannot_be_read") {
        return;
    }
    let ws = outside_dir();
    let outside = outside_dir();
    let secret_dir = outside.path().join("secrets");
    std::fs::create_dir(&secret_dir).unwrap();
    std::fs::write(secret_dir.join("key"), "TOPSECRET").unwrap();
    std::fs::write(outside.path().join("public"), "PUBLIC").unwrap();
    // A symlink next to the secret leads back into it.
    std::os::unix::fs::symlink(&secret_dir, outside.path().join("link")).unwrap();

    let mut c = sandboxed(ws.path(), SandboxMode::WorkspaceWrite);
    c.sandbox.readable_denied = vec![secret_dir.clone()];
    let read_secret = format!("cat {}", q(&secret_dir.join("key")));

    let run = sh(&c, &read_secret).await;
    denied(&run, "read a denied file");
    assert!(!run.output.contains("TOPSECRET"));
    let run = sh(&c, &format!("cat {}", q(&outside.path().join("link/key")))).await;
    denied(&run, "read it through a symlink");
    assert!(!run.output.contains("TOPSECRET"));
    denied(
        &sh(&c, &format!("cp -r {} copy", q(&secret_dir))).await,
        "copy a denied dir",
    );
    assert!(!ws.path().join("copy/key").exists());
    let run = sh(
        &c,
        &format!(
            "cat {} && ls / >/dev/null",
            q(&outside.path().join("public"))
        ),
    )
    .await;
    ok(&run, "read next to a denied dir");
    assert!(run.output.contains("PUBLIC"));
    ok(&sh(&c, "echo hi > w.txt").await, "workspace still writable");

    let free = ctx(ws.path());
    let run = sh(&free, &read_secret).await;
    ok(&run, "read unsandboxed");
    assert!(run.output.contains("TOPSECRET"));
}

#[tokio::test]
async fn a_denied_read_inside_a_writable_root_is_refused() {
    if !enforceable("a_denied_read_inside_a_writable_root_is_refused") {
        return;
    }
    let ws = outside_dir();
    std::fs::create_dir(ws.path().join("private")).unwrap();
    let mut c = sandboxed(ws.path(), SandboxMode::WorkspaceWrite);
    c.sandbox.readable_denied = vec![ws.path().join("private")];
    let run = sh(&c, "touch ran").await;
    assert_eq!(run.status, ToolStatus::Error, "{}", run.output);
    assert!(
        run.output.contains("inside the writable root"),
        "{}",
        run.output
    );
    assert!(!ws.path().join("ran").exists(), "the command must not run");
}

/// The TCP connection test: returns the command's run and whether the
/// listener got a connection.
async fn connect_to_listener(c: &ToolContext) -> (Run, bool) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let run = sh(
        c,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED"),
    )
    .await;
    // The command has exited (and its group was killed) by now. A loopback
    // connect() completes the handshake before it returns, so any connection
    // it made is already waiting in the backlog: no sleep needed.
    listener.set_nonblocking(true).unwrap();
    let connected = match listener.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(e) => panic!("accept: {e}"),
    };
    (run, connected)
}

#[tokio::test]
async fn network_is_denied_unless_allowed() {
    if !enforceable("network_is_denied_unless_allowed") {
        return;
    }
    let ws = outside_dir();

    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let c = sandboxed(ws.path(), mode);
        let (run, connected) = connect_to_listener(&c).await;
        eprintln!("{mode:?}: {}", run.output);
        assert_eq!(run.status, ToolStatus::Ok, "{}", run.output);
        assert_ne!(run.exit_code, Some(0), "{mode:?}: {}", run.output);
        assert!(!run.output.contains("CONNECTED"), "{}", run.output);
        assert!(
            run.output.contains("Operation not permitted"),
            "{mode:?}: expected EPERM from socket(): {}",
            run.output
        );
        assert!(!connected, "{mode:?}: the listener must see no connection");
    }

    // Allowed by the policy.
    let mut c = sandboxed(ws.path(), SandboxMode::WorkspaceWrite);
    c.sandbox.network = true;
    let (run, connected) = connect_to_listener(&c).await;
    ok(&run, "connect with network allowed");
    assert!(run.output.contains("CONNECTED"));
    assert!(connected);

    // And without any sandbox.
    let (run, connected) = connect_to_listener(&ctx(ws.path())).await;
    ok(&run, "connect unsandboxed");
    assert!(run.output.contains("CONNECTED"));
    assert!(connected);
}

#[tokio::test]
async fn unix_sockets_still_work_without_network() {
    if !enforceable("unix_sockets_still_work_without_network") {
        return;
    }
    let ws = outside_dir();
    let sock = ws.path().join("s.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let c = sandboxed(ws.path(), SandboxMode::WorkspaceWrite);
    // bash has no /dev/unix; python (if any) does the connect.
    let script = format!(
        "import socket; s = socket.socket(socket.AF_UNIX); s.connect({:?}); print('UNIX OK')",
        canon(ws.path()).join("s.sock").display().to_string()
    );
    let run = sh(
        &c,
        &format!(
            "if command -v python3 >/dev/null; then python3 -c {}; else echo NO PYTHON; fi",
            shell_quote(&script)
        ),
    )
    .await;
    if run.output.contains("NO PYTHON") {
        eprintln!("SKIPPED unix_sockets_still_work_without_network: no python3");
        return;
    }
    ok(&run, "AF_UNIX connect");
    assert!(run.output.contains("UNIX OK"), "{}", run.output);
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_ok());
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[tokio::test]
async fn signals_cannot_leave_the_sandbox() {
    if !enforceable("signals_cannot_leave_the_sandbox") {
        return;
    }
    if SandboxSupport::probe().landlock_abi < 6 {
        eprintln!("SKIPPED signals_cannot_leave_the_sandbox: needs Landlock ABI 6");
        return;
    }
    let ws = outside_dir();
    let me = std::process::id();
    let c = sandboxed(ws.path(), SandboxMode::WorkspaceWrite);
    let run = sh(&c, &format!("kill -0 {me}")).await;
    assert_ne!(run.exit_code, Some(0), "{}", run.output);
    // In a PID namespace of its own the runtime has no pid to signal; where
    // there is none, Landlock refuses the signal.
    assert!(
        run.output.contains("Operation not permitted") || run.output.contains("No such process"),
        "{}",
        run.output
    );
    // Its own children are fair game.
    let run = sh(&c, "sleep 5 & kill $!; wait; echo reaped").await;
    ok(&run, "kill own child");
    assert!(run.output.contains("reaped"));
    ok(
        &sh(&ctx(ws.path()), &format!("kill -0 {me}")).await,
        "unsandboxed",
    );
}

#[tokio::test]
async fn file_tools_do_not_write_under_read_only() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "one").unwrap();
    let c = sandboxed(ws.path(), SandboxMode::ReadOnly);

    let out = WriteFileTool
        .run(json!({"path": "b.txt", "content": "x"}), c.clone())
        .await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("read-only"),
        "{}",
        out.model_output
    );
    assert!(!ws.path().join("b.txt").exists());

    let out = EditFileTool
        .run(
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
            c,
        )
        .await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("read-only"),
        "{}",
        out.model_output
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "one"
    );

    // workspace-write lets them write in the workspace as before.
    let c = sandboxed(ws.path(), SandboxMode::WorkspaceWrite);
    let out = WriteFileTool
        .run(json!({"path": "b.txt", "content": "x"}), c)
        .await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.model_output);
}

/// A command whose `bash` cannot start (its workspace is gone) is an error
/// that says why, in every mode; nothing runs.
#[tokio::test]
async fn a_command_that_cannot_start_says_why() {
    let ws = outside_dir();
    let gone = ws.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let mut contexts = vec![ctx(&gone)];
    if enforceable("a_command_that_cannot_start_says_why (sandboxed)") {
        contexts.push(sandboxed(&gone, SandboxMode::WorkspaceWrite));
    }
    std::fs::remove_dir(&gone).unwrap();
    for c in contexts {
        let sandboxed = c.sandbox.is_sandboxed();
        let out = ShellTool.run(json!({ "command": "touch ../ran" }), c).await;
        assert_eq!(out.status, ToolStatus::Error, "{}", out.model_output);
        let why = if sandboxed {
            "shell: could not start bash in the workspace-write sandbox: No such file or directory"
        } else {
            "shell: could not run bash: No such file or directory"
        };
        assert!(out.model_output.starts_with(why), "{}", out.model_output);
        assert!(!ws.path().join("ran").exists());
    }
}

/// Many sandboxed commands started at once (each clone shares the runtime's
/// memory until its exec) all run, each with its own output.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sandboxed_commands_started_at_once_each_get_their_own_output() {
    if !enforceable("sandboxed_commands_started_at_once_each_get_their_own_output") {
        return;
    }
    let ws = outside_dir();
    let c = sandboxed(ws.path(), SandboxMode::WorkspaceWrite);
    let runs = (0..24).map(|i| {
        let c = c.clone();
        tokio::spawn(async move { (i, sh(&c, &format!("echo \"command {i}\"")).await) })
    });
    for run in runs {
        let (i, run) = run.await.unwrap();
        ok(&run, "concurrent command");
        assert_eq!(run.output, format!("command {i}\n"));
    }
}

//! Shell snapshots: the login profile runs once for many commands, commands
//! still see what it set up, an edit to it is picked up, a broken one does
//! not stop commands, and a sandboxed command reads its own snapshot only.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::ctx;
use gantry_tools::{
    SandboxPolicy, SandboxSupport, ShellSnapshots, ShellTool, Tool, ToolContext, ToolStatus,
};
use gantry_types::{ItemKind, SandboxMode};
use serde_json::json;

/// How long the test profile takes: every command paying it would show.
const PROFILE_DELAY: Duration = Duration::from_secs(1);

/// A `.bashrc` that takes [`PROFILE_DELAY`], counts its runs in `runs`,
/// exports a variable and a key, and defines a function and an alias.
fn write_profile(home: &Path, greeting: &str) {
    let rc = format!(
        "sleep {secs}\n\
         echo ran >> \"$HOME/runs\"\n\
         echo 'profile chatter on stdout'\n\
         export GREETING='{greeting}'\n\
         export DEPLOY_TOKEN=from-the-profile\n\
         greet() {{ echo \"hello from a function, $1\"; }}\n\
         alias shout='echo LOUD'\n",
        secs = PROFILE_DELAY.as_secs()
    );
    std::fs::write(home.join(".bashrc"), rc).unwrap();
}

fn profile_runs(home: &Path) -> usize {
    std::fs::read_to_string(home.join("runs"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// A context whose commands get `home` as `HOME` and snapshots from `snapshots`.
fn ctx_with(workspace: &Path, home: &Path, snapshots: &Arc<ShellSnapshots>) -> ToolContext {
    let mut c = ctx(workspace);
    c.env = Arc::new(BTreeMap::from([
        ("HOME".to_owned(), home.display().to_string()),
        ("SHELL".to_owned(), "/bin/bash".to_owned()),
    ]));
    c.shell_snapshots = Some(snapshots.clone());
    c
}

async fn run(c: &ToolContext, command: &str) -> (ToolStatus, String, Option<i32>) {
    let out = ShellTool
        .run(json!({ "command": command }), c.clone())
        .await;
    match out.item {
        ItemKind::CommandExecution {
            output, exit_code, ..
        } => (out.status, output, exit_code),
        other => panic!("expected CommandExecution, got {other:?}"),
    }
}

#[tokio::test]
async fn ten_commands_run_the_profile_once_and_all_see_its_variables_functions_and_aliases() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    write_profile(home.path(), "hi there");
    let snapshots = Arc::new(ShellSnapshots::new(Some(&data.path().join("snapshots"))).unwrap());
    let c = ctx_with(ws.path(), home.path(), &snapshots);

    let started = Instant::now();
    for round in 0..10 {
        let (status, output, code) =
            run(&c, &format!("greet {round}; echo \"$GREETING\"; shout")).await;
        assert_eq!((status, code), (ToolStatus::Ok, Some(0)), "{output}");
        assert_eq!(
            output,
            format!("hello from a function, {round}\nhi there\nLOUD\n"),
            "the profile's stdout stays out of the command's output"
        );
    }
    let elapsed = started.elapsed();

    assert_eq!(
        profile_runs(home.path()),
        1,
        "the profile ran once for ten commands"
    );
    assert!(
        elapsed < PROFILE_DELAY * 2,
        "ten commands took {elapsed:?}; a profile of {PROFILE_DELAY:?} per command would take 10 s"
    );
    // What the profile exported under a secret-looking name is not passed on.
    let (_, output, _) = run(&c, "echo \"token=[$DEPLOY_TOKEN]\"").await;
    assert_eq!(output, "token=[]\n");
    let files: Vec<_> = std::fs::read_dir(data.path().join("snapshots"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(files[0].path()).unwrap();
    assert!(!text.contains("from-the-profile"), "{text}");
    use std::os::unix::fs::PermissionsExt;
    let mode = files[0].metadata().unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the snapshot is the user's alone");
}

#[tokio::test]
async fn an_edited_profile_is_snapshotted_again() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    write_profile(home.path(), "first");
    let snapshots = Arc::new(ShellSnapshots::new(None).unwrap());
    let c = ctx_with(ws.path(), home.path(), &snapshots);
    assert_eq!(run(&c, "echo $GREETING").await.1, "first\n");

    write_profile(home.path(), "second");
    assert_eq!(run(&c, "echo $GREETING").await.1, "second\n");
    assert_eq!(run(&c, "echo $GREETING").await.1, "second\n");
    assert_eq!(profile_runs(home.path()), 2);
}

#[tokio::test]
async fn a_failing_profile_still_lets_commands_run_and_says_so_once() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".bashrc"),
        "echo 'pyenv: cannot rehash: isn'\\''t writable' >&2\nexit 3\n",
    )
    .unwrap();
    let snapshots = Arc::new(ShellSnapshots::new(None).unwrap());
    let c = ctx_with(ws.path(), home.path(), &snapshots);

    let (status, first, code) = run(&c, "echo still runs").await;
    assert_eq!((status, code), (ToolStatus::Ok, Some(0)), "{first}");
    let (note, rest) = first.split_once('\n').unwrap();
    assert!(
        note.contains("could not snapshot your login profile")
            && note.contains("exited with 3")
            && note.contains("cannot rehash"),
        "{note}"
    );
    assert_eq!(rest, "still runs\n");
    assert_eq!(
        run(&c, "echo again").await.1,
        "again\n",
        "the note is given once"
    );
}

#[tokio::test]
async fn a_snapshot_prepared_ahead_is_the_one_the_first_command_uses() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    write_profile(home.path(), "ready early");
    let snapshots = Arc::new(ShellSnapshots::new(None).unwrap());
    let c = ctx_with(ws.path(), home.path(), &snapshots);

    // What a turn does beside its first model request.
    snapshots.prepare(&c.env, &c.sandbox).await;
    assert_eq!(
        profile_runs(home.path()),
        1,
        "the profile ran before any command"
    );
    for _ in 0..3 {
        assert_eq!(run(&c, "echo \"$GREETING\"").await.1, "ready early\n");
    }
    assert_eq!(
        profile_runs(home.path()),
        1,
        "and not again for the commands"
    );
}

#[tokio::test]
async fn a_failure_found_ahead_is_still_told_by_the_first_command() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join(".bashrc"), "echo broken >&2\nexit 4\n").unwrap();
    let snapshots = Arc::new(ShellSnapshots::new(None).unwrap());
    let c = ctx_with(ws.path(), home.path(), &snapshots);

    snapshots.prepare(&c.env, &c.sandbox).await;
    let (status, first, code) = run(&c, "echo still runs").await;
    assert_eq!((status, code), (ToolStatus::Ok, Some(0)), "{first}");
    let (note, rest) = first.split_once('\n').unwrap();
    assert!(
        note.contains("could not snapshot your login profile") && note.contains("exited with 4"),
        "{note}"
    );
    assert_eq!(rest, "still runs\n");
}

#[tokio::test]
async fn a_sandboxed_command_sources_its_snapshot_but_cannot_read_other_files_beside_it() {
    if let Some(reason) = SandboxSupport::probe().problem {
        eprintln!("SKIPPED: the sandbox cannot be enforced on this machine: {reason}");
        return;
    }
    // Outside the temp dir, which sandboxed commands may write (and read).
    let outside = gantry_testkit::process::dir_outside_temp().unwrap();
    let home = outside.path().join("home");
    let data = outside.path().join("data");
    let ws = outside.path().join("ws");
    for dir in [&home, &data, &ws] {
        std::fs::create_dir_all(dir).unwrap();
    }
    write_profile(&home, "sandboxed hello");
    let snapshots = Arc::new(ShellSnapshots::new(Some(&data.join("shell-snapshots"))).unwrap());
    let mut c = ctx_with(&ws, &home, &snapshots);
    let mut policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &c.workspace);
    policy.protected.push(data.clone());
    c.sandbox = policy;
    // Another snapshot in the same folder (another profile's, say).
    let other = data.join("shell-snapshots/other.sh");
    std::fs::write(&other, "export OTHER=secret\n").unwrap();

    let (status, output, code) = run(&c, "greet me; echo \"$GREETING\"").await;
    assert_eq!((status, code), (ToolStatus::Ok, Some(0)), "{output}");
    assert_eq!(output, "hello from a function, me\nsandboxed hello\n");
    let (_, output, code) = run(&c, &format!("cat '{}'", other.display())).await;
    assert_ne!(code, Some(0), "{output}");
    assert!(output.contains("Permission denied"), "{output}");
}

#[tokio::test]
async fn a_command_dropped_while_the_profile_runs_does_not_kill_the_profile() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    // A profile that takes a lock while it works, as `pyenv rehash` does.
    std::fs::write(
        home.path().join(".bashrc"),
        "touch \"$HOME/lock\"; sleep 0.5; rm \"$HOME/lock\"; echo ran >> \"$HOME/runs\"\n",
    )
    .unwrap();
    let snapshots = Arc::new(ShellSnapshots::new(None).unwrap());
    let c = ctx_with(ws.path(), home.path(), &snapshots);

    // The engine drops a tool's future when it gives up on the call.
    let dropped = tokio::time::timeout(
        Duration::from_millis(100),
        ShellTool.run(json!({"command": "true"}), c.clone()),
    )
    .await;
    assert!(
        dropped.is_err(),
        "the command was still waiting for the profile"
    );
    // The next command waits for the same capture instead of starting another.
    assert_eq!(run(&c, "echo next").await.1, "next\n");
    assert!(
        !home.path().join("lock").exists(),
        "the profile finished its work"
    );
    assert_eq!(profile_runs(home.path()), 1);
}

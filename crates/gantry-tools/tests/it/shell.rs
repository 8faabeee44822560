//! The `shell` tool against a real bash.

use crate::common;

use std::io::Write;
use std::time::Duration;

use common::{call, ctx, ctx_collecting, ctx_each_start};
use gantry_tools::{ShellTool, Tool, ToolContext, ToolLimits, ToolOutput, ToolStatus};
use gantry_types::ItemKind;
use serde_json::json;

struct Cmd {
    output: String,
    exit_code: Option<i32>,
    pid: u32,
}

fn cmd(out: &ToolOutput) -> Cmd {
    match &out.item {
        ItemKind::CommandExecution {
            output,
            exit_code,
            process_id,
            duration_ms,
            ..
        } => {
            assert!(duration_ms.is_some());
            Cmd {
                output: output.clone(),
                exit_code: *exit_code,
                pid: process_id.expect("process id"),
            }
        }
        other => panic!("expected CommandExecution, got {other:?}"),
    }
}

/// Members of process group `pgid` that are still running: not zombies and
/// not already inside `exit()` (PF_EXITING). Zombies are left for init to
/// reap (our test process is not their parent), so "gone" means "none alive".
fn live_group_members(pgid: u32) -> Vec<String> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        // After "pid (comm) ": state ppid pgrp session tty_nr tpgid flags ...
        let f: Vec<&str> = rest.split_whitespace().collect();
        let (state, pgrp, flags) = (f[0], f[2], f[6].parse::<u64>().unwrap());
        const PF_EXITING: u64 = 0x4;
        if pgrp == pgid.to_string() && state != "Z" && state != "X" && flags & PF_EXITING == 0 {
            live.push(stat.clone());
        }
    }
    live
}

/// Sends what `c`'s command streams to the returned channel.
fn stream_to_channel(c: &mut ToolContext) -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    c.output = gantry_tools::output_sink(move |s: &str| {
        let _ = tx.send(s.to_string());
    });
    rx
}

fn assert_group_gone(pgid: u32) {
    let rc = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid as i32), None);
    if rc != Err(nix::errno::Errno::ESRCH) {
        // Only zombies waiting for init may remain.
        assert_eq!(live_group_members(pgid), Vec::<String>::new());
    }
}

#[tokio::test]
async fn exit_code_and_merged_output() {
    let dir = tempfile::tempdir().unwrap();
    for c in ctx_each_start(dir.path()) {
        let out = ShellTool
            .run(
                json!({"command": "echo out1; echo err1 >&2; echo out2; exit 3"}),
                c,
            )
            .await;
        assert_eq!(out.status, ToolStatus::Ok, "{}", out.model_output);
        let c = cmd(&out);
        assert_eq!(c.exit_code, Some(3));
        assert!(c.output.contains("out1\nerr1\nout2\n"), "{:?}", c.output);
        assert!(
            out.model_output.starts_with("Exit code: 3\nWall time: "),
            "{}",
            out.model_output
        );
        assert!(out.model_output.contains("Output:\nout1\n"));
        assert_group_gone(c.pid);
    }
}

/// What a process may inherit from the runtime and must not: a blocked
/// signal mask (the runtime blocks every signal while it starts `bash`),
/// an ignored SIGPIPE (Rust ignores it, which would make `yes | head` end in
/// "Broken pipe" errors instead of a quiet exit), someone else's process
/// group.
#[tokio::test]
async fn commands_start_with_default_signals_in_their_own_group() {
    let dir = tempfile::tempdir().unwrap();
    for c in ctx_each_start(dir.path()) {
        let c_sandboxed = c.sandbox.is_sandboxed()
            && gantry_tools::SandboxSupport::probe()
                .namespace_problem
                .is_none();
        let command = "grep -E '^(SigBlk|SigIgn)' /proc/self/status; \
                       yes | head -n 1; echo \"yes: ${PIPESTATUS[0]}\"; \
                       read -r -a stat < /proc/$$/stat; echo \"pid $$ group ${stat[4]}\"";
        let out = ShellTool.run(json!({ "command": command }), c).await;
        let res = cmd(&out);
        assert_eq!(res.exit_code, Some(0), "{}", res.output);
        assert!(
            res.output.contains("SigBlk:\t0000000000000000\n"),
            "{}",
            res.output
        );
        // SIGPIPE is signal 13: bit 12 of the ignored set.
        let ignored = res
            .output
            .lines()
            .find_map(|l| l.strip_prefix("SigIgn:\t"))
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
            .expect("SigIgn line");
        assert_eq!(ignored & (1 << 12), 0, "{}", res.output);
        assert!(res.output.contains("y\nyes: 141\n"), "{}", res.output);
        // Its own group's leader. A sandboxed command in a PID namespace
        // of its own is PID 1 there, whatever pid the runtime knows it by.
        let pid = if c_sandboxed { 1 } else { res.pid };
        assert!(
            res.output.contains(&format!("pid {pid} group {pid}\n")),
            "{}",
            res.output
        );
    }
}

#[tokio::test]
async fn runs_in_workspace_and_workdir_with_null_stdin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let ws = common::canon(dir.path());
    for c in ctx_each_start(dir.path()) {
        let out = ShellTool
            .run(json!({"command": "pwd; cat; echo eof"}), c.clone())
            .await;
        assert_eq!(cmd(&out).output, format!("{}\neof\n", ws.display()));
        let out = ShellTool
            .run(json!({"command": "pwd", "workdir": "sub"}), c.clone())
            .await;
        assert_eq!(cmd(&out).output, format!("{}\n", ws.join("sub").display()));
        // An empty workdir, as small models send, is the workspace.
        let out = ShellTool
            .run(json!({"command": "pwd", "workdir": ""}), c)
            .await;
        assert_eq!(cmd(&out).output, format!("{}\n", ws.display()));
    }
    let out = call(
        &ShellTool,
        dir.path(),
        json!({"command": "pwd", "workdir": "../"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("outside the workspace"),
        "{}",
        out.model_output
    );
    let out = call(
        &ShellTool,
        dir.path(),
        json!({"command": "pwd", "workdir": "nope"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("not an existing directory"),
        "{}",
        out.model_output
    );
}

#[tokio::test]
async fn non_utf8_output_is_decoded_lossily() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(
        &ShellTool,
        dir.path(),
        json!({"command": r"printf '\xff\xfe ok'"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok);
    let c = cmd(&out);
    assert_eq!(c.exit_code, Some(0));
    assert!(c.output.ends_with(" ok"), "{:?}", c.output);
    assert!(c.output.contains('\u{FFFD}'));
}

#[tokio::test]
async fn huge_output_is_capped_with_head_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    let (c, deltas) = ctx_collecting(dir.path());
    let cap = c.limits.output_cap_bytes;
    let out = ShellTool
        .run(
            json!({"command": "echo START; head -c 10000000 /dev/zero | tr '\\0' a; echo; echo END"}),
            c,
        )
        .await;
    assert_eq!(out.status, ToolStatus::Ok);
    let res = cmd(&out);
    assert_eq!(res.exit_code, Some(0));
    let total = "START\n".len() + 10_000_000 + "\nEND\n".len();
    let marker = format!("\n[... {} bytes truncated ...]\n", total - cap);
    assert!(res.output.contains(&marker), "marker missing");
    assert!(res.output.starts_with("START\naaa"));
    assert!(res.output.ends_with("aaa\nEND\n"));
    assert_eq!(res.output.len(), cap + marker.len());
    let deltas = deltas.lock().unwrap();
    let streamed: usize = deltas.iter().map(String::len).sum();
    let markers = deltas
        .iter()
        .filter(|d| d.contains("live output stops here"))
        .count();
    assert_eq!(markers, 1);
    assert!(streamed < cap + 200, "streamed {streamed} bytes");
}

// Timeouts in these tests are long enough for `bash -l` to finish its login
// scripts: killing a shell in the middle of them (e.g. during `pyenv rehash`)
// can leave the scripts' lock files behind.
#[tokio::test]
async fn timeout_kills_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    for c in ctx_each_start(dir.path()) {
        let out = ShellTool
            .run(
                json!({"command": "sleep 60 & echo started; sleep 60", "timeout_ms": 2000}),
                c,
            )
            .await;
        assert_eq!(out.status, ToolStatus::Error);
        let c = cmd(&out);
        assert_eq!(c.exit_code, None);
        // Whether "started" got out depends on how fast bash starts; the
        // grandchild case is covered deterministically by the cancel test.
        assert!(
            c.output.contains("command timed out after 2 s"),
            "{:?}",
            c.output
        );
        assert!(out.model_output.contains("timed out"));
        assert_group_gone(c.pid);
    }
}

#[tokio::test]
async fn default_timeout_comes_from_limits() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    c.limits = ToolLimits {
        shell_timeout: Duration::from_millis(1500),
        ..ToolLimits::default()
    };
    let out = ShellTool.run(json!({"command": "sleep 60"}), c).await;
    assert!(cmd(&out).output.contains("command timed out after 1.5 s"));
}

#[tokio::test]
async fn a_receiver_that_never_takes_output_does_not_keep_a_command_past_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    c.limits = ToolLimits {
        shell_timeout: Duration::from_millis(300),
        ..ToolLimits::default()
    };
    // A stuck receiver (a client whose store stopped): no chunk is taken.
    c.output = std::sync::Arc::new(|_chunk: String| -> gantry_tools::OutputTaken {
        Box::pin(std::future::pending())
    });
    let out = ShellTool
        .run(json!({"command": "echo first; sleep 60"}), c)
        .await;
    let res = cmd(&out);
    assert!(
        res.output.contains("command timed out after 0.3 s"),
        "{}",
        res.output
    );
    assert_group_gone(res.pid);
}

#[tokio::test]
async fn cancel_kills_children_and_grandchildren() {
    let dir = tempfile::tempdir().unwrap();
    for mut c in ctx_each_start(dir.path()) {
        let mut rx = stream_to_channel(&mut c);
        let cancel = c.cancel.clone();
        // A child, and a grandchild under a nested bash, all in the group.
        // "started" comes from the nested bash after it forked its own sleep, so
        // both the child and the grandchild exist when the test cancels.
        let command = "sleep 60 & bash -c 'sleep 60 & echo started; wait' & wait";
        let task = tokio::spawn(async move { ShellTool.run(json!({"command": command}), c).await });
        let mut seen = String::new();
        while !seen.contains("started") {
            seen.push_str(&rx.recv().await.expect("delta"));
        }
        cancel.cancel();
        let out = task.await.unwrap();
        assert_eq!(out.status, ToolStatus::Interrupted);
        let res = cmd(&out);
        assert_eq!(res.exit_code, None);
        assert!(res.output.contains("interrupted"));
        assert_group_gone(res.pid);
    }
}

/// The engine drops a call's future when it gives up on it: the command is
/// killed and reaped, not left running or as a zombie.
#[tokio::test]
async fn a_dropped_call_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    for mut c in ctx_each_start(dir.path()) {
        let mut rx = stream_to_channel(&mut c);
        // Found by its command line: a command in a PID namespace of its
        // own does not know the pid the runtime sees.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let marker = format!("dropped-call-{}-{nanos}", std::process::id());
        let command = format!("echo started; sleep 60; echo done # {marker}");
        let task = tokio::spawn(async move { ShellTool.run(json!({"command": command}), c).await });
        let mut seen = String::new();
        while !seen.ends_with('\n') {
            seen.push_str(&rx.recv().await.expect("delta"));
        }
        // The shell, and maybe its fork that is about to exec `sleep`.
        let pids = pids_running(&marker);
        assert!(!pids.is_empty(), "no process runs the command");
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        // Reaping happens on the runtime once the kill has landed; until
        // then the process shows as running or as a zombie.
        for pid in pids {
            let stat = format!("/proc/{pid}/stat");
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            while std::path::Path::new(&stat).exists() {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{pid} still there: {}",
                    std::fs::read_to_string(&stat).unwrap_or_default()
                );
                tokio::task::yield_now().await;
            }
        }
    }
}

#[tokio::test]
async fn background_job_does_not_hang_the_call() {
    let dir = tempfile::tempdir().unwrap();
    // The background sleep holds the output pipe; the call still returns
    // when bash exits, because the group is killed then.
    for c in ctx_each_start(dir.path()) {
        let out = ShellTool
            .run(json!({"command": "sleep 60 & echo done"}), c)
            .await;
        let c = cmd(&out);
        assert_eq!(c.exit_code, Some(0));
        assert_eq!(c.output, "done\n");
        assert_group_gone(c.pid);
    }
}

#[tokio::test]
async fn output_streams_before_the_command_ends() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let (mut c, _) = ctx_collecting(dir.path());
    let mut rx = stream_to_channel(&mut c);
    // The command cannot finish until the test writes the fifo, which it
    // only does after it has seen the first line streamed.
    let command = "echo first; read line < fifo; echo \"got $line\"";
    let task = tokio::spawn(async move { ShellTool.run(json!({"command": command}), c).await });
    let mut seen = String::new();
    while !seen.contains("first\n") {
        seen.push_str(&rx.recv().await.expect("delta"));
    }
    assert!(!seen.contains("got"));
    tokio::task::spawn_blocking(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        f.write_all(b"x\n").unwrap();
    })
    .await
    .unwrap();
    let out = task.await.unwrap();
    assert_eq!(cmd(&out).output, "first\ngot x\n");
    while let Ok(d) = rx.try_recv() {
        seen.push_str(&d);
    }
    assert_eq!(seen, "first\ngot x\n");
}

#[tokio::test]
async fn bad_arguments_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(&ShellTool, dir.path(), json!({"command": 5})).await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("invalid type"),
        "{}",
        out.model_output
    );
    let out = call(&ShellTool, dir.path(), json!({})).await;
    assert!(
        out.model_output.contains("missing field `command`"),
        "{}",
        out.model_output
    );
    let out = call(
        &ShellTool,
        dir.path(),
        json!({"command": "true", "timeout_ms": "5"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Error);
    let out = call(
        &ShellTool,
        dir.path(),
        json!({"command": "true", "cwd": "x"}),
    )
    .await;
    assert!(
        out.model_output.contains("unknown field `cwd`"),
        "{}",
        out.model_output
    );
    let out = call(&ShellTool, dir.path(), json!("ls")).await;
    assert!(
        out.model_output.contains("expected a JSON object"),
        "{}",
        out.model_output
    );
}

/// The pids of the processes whose command line holds `marker`.
fn pids_running(marker: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            pids.push(pid);
        }
    }
    pids
}

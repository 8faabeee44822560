//! What README.md promises about the `gantry` process itself, against the
//! real binary: Ctrl-C ends `gantry exec` with exit code 130 after closing
//! the turn (and kills the running command's process group), one process
//! owns a data dir at a time, and `gantry serve` warns when it listens
//! beyond loopback without a token.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Scratch, read};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

/// Longest wait for anything a process should do.
const GUARD: Duration = Duration::from_secs(30);

/// A child process killed when dropped.
struct Proc(Child);

impl Proc {
    fn signal(&self, signal: Signal) {
        let pid = Pid::from_raw(i32::try_from(self.0.id()).expect("pid"));
        kill(pid, signal).expect("send the signal");
    }

    /// Waits for the exit (bounded by [`GUARD`]): its code.
    fn exit_code(&mut self) -> Option<i32> {
        let deadline = Instant::now() + GUARD;
        loop {
            if let Some(status) = self.0.try_wait().expect("wait") {
                return status.code();
            }
            assert!(Instant::now() < deadline, "the process did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lines of a child's stream, read on a thread.
fn lines(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Lines up to and including the first for which `done` holds, within
/// [`GUARD`].
fn lines_until(lines: &mpsc::Receiver<String>, done: impl Fn(&str) -> bool) -> Vec<String> {
    let deadline = Instant::now() + GUARD;
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => {
                let stop = done(&line);
                seen.push(line);
                if stop {
                    return seen;
                }
            }
            Err(_) => break,
        }
    }
    panic!("the line waited for never came; got {seen:#?}");
}

/// Every line left, up to the end of the stream (bounded by [`GUARD`]).
fn rest(lines: &mpsc::Receiver<String>) -> Vec<String> {
    let deadline = Instant::now() + GUARD;
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => return seen,
            Err(mpsc::RecvTimeoutError::Timeout) => break,
        }
    }
    panic!("the stream did not end; got {seen:#?}");
}

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

fn is_type(line: &str, kind: &str) -> bool {
    json(line)["type"] == kind
}

/// `gantry exec --json` with `script` as its model, running in the
/// background: the process and its stdout and stderr lines.
fn exec(
    s: &Scratch,
    script: Value,
    extra: &[&str],
) -> (Proc, mpsc::Receiver<String>, mpsc::Receiver<String>) {
    let model = s.script(&format!("script-{}.json", next_id()), script);
    let mut child = s
        .gantry()
        .args(["exec", "--json", "--model", &model])
        .args(extra)
        .arg("go")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn gantry exec");
    let stdout = lines(child.stdout.take().expect("stdout"));
    let stderr = lines(child.stderr.take().expect("stderr"));
    (Proc(child), stdout, stderr)
}

/// A name part unique within this process.
fn next_id() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
}

/// The stderr lines seen so far (for failure messages).
fn drain(lines: &mpsc::Receiver<String>) -> String {
    lines.try_iter().collect::<Vec<_>>().join("\n")
}

#[test]
fn ctrl_c_while_the_model_answers_ends_the_turn_interrupted_with_exit_130() {
    let s = Scratch::new();
    // The answer's first chunk comes after ten minutes: the turn is
    // mid-request for as long as the test needs.
    let slow = json!({"steps": [
        {"reply": {"text": "never said", "chunk_size": 1, "delay_ms": 600_000}}
    ]});
    let report = s.dir.path().join("report.json");
    let (mut gantry, stdout, stderr) = exec(&s, slow, &["--report", report.to_str().unwrap()]);
    let mut seen = lines_until(&stdout, |l| is_type(l, "turn.started"));
    gantry.signal(Signal::SIGINT);
    seen.extend(rest(&stdout));
    let code = gantry.exit_code();
    assert_eq!(code, Some(130), "stderr: {}", drain(&stderr));
    // The run report (`--report`) says so too.
    let report: Value = serde_json::from_str(&read(&report)).expect("the run report");
    assert_eq!(report["outcome"], "interrupted", "{report}");
    assert_eq!(report["exit_code"], 130);

    let last = json(seen.last().expect("a last line"));
    assert_eq!(last["type"], "turn.completed", "{seen:#?}");
    assert_eq!(last["status"], "interrupted", "{last}");
    assert_eq!(last["turn_id"], json(&seen[1])["turn_id"]);
    assert!(
        seen.iter().all(|l| !l.contains("never said")),
        "no answer was made up: {seen:#?}"
    );
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // "PID (COMM) STATE ...": the state follows the last ')'.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn ctrl_c_while_a_command_runs_kills_its_process_group_and_exits_130() {
    let s = Scratch::new();
    // A command that leaves a child in its process group, named by its
    // argument (in its PID namespace the command knows no pid of ours).
    let command = json!({"steps": [
        {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": "sleep 600.0193 & echo started; wait"}}]}},
        {"reply": {"text": "not reached"}}
    ]});
    let (mut gantry, stdout, stderr) = exec(&s, command, &[]);
    let mut seen = lines_until(&stdout, |l| is_type(l, "command.output"));
    // It may still be between its fork and its exec.
    let deadline = Instant::now() + GUARD;
    let sleeper = loop {
        if let [pid] = gantry_testkit::process::pids_with_arg("600.0193")[..] {
            break pid;
        }
        assert!(Instant::now() < deadline, "the command's child never ran");
        std::thread::yield_now();
    };

    gantry.signal(Signal::SIGINT);
    seen.extend(rest(&stdout));
    let code = gantry.exit_code();
    assert_eq!(code, Some(130), "stderr: {}", drain(&stderr));
    let last = json(seen.last().expect("a last line"));
    assert_eq!(last["type"], "turn.completed", "{seen:#?}");
    assert_eq!(last["status"], "interrupted", "{last}");
    let command = seen
        .iter()
        .map(|l| json(l))
        .find(|l| l["type"] == "item.completed" && l["item"]["type"] == "command_execution")
        .expect("the command's item is closed");
    assert_ne!(command["item"]["status"], "completed", "{command}");

    // SIGKILL went to the whole group: the background child dies too. It
    // is reaped by whoever inherits it, so allow for that, bounded.
    let deadline = Instant::now() + GUARD;
    while !is_dead(sleeper) {
        assert!(
            Instant::now() < deadline,
            "the command's child {sleeper} outlived the interrupted turn"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_process_on_the_same_data_dir_fails_at_once_and_the_first_goes_on() {
    let s = Scratch::new();
    let data = s.dir.path().join("data");
    // The first turn runs a command that waits for a file the test makes.
    let waits = json!({"steps": [
        {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": "while [ ! -e release ]; do sleep 0.05; done; echo released"}}]}},
        {"reply": {"text": "first done"}}
    ]});
    // GANTRY_DATA_DIR names the data dir (common::Scratch sets it).
    let (mut first, stdout, stderr) = exec(&s, waits, &[]);
    let mut seen = lines_until(&stdout, |l| {
        let l = json(l);
        l["type"] == "item.started" && l["item"]["type"] == "command_execution"
    });

    // The second, naming the same dir with --data-dir: refused, one line.
    let started = Instant::now();
    let model = s.script(
        "second.json",
        json!({"steps": [{"reply": {"text": "second done"}}]}),
    );
    let second = s
        .gantry()
        .env_remove("GANTRY_DATA_DIR")
        .arg("--data-dir")
        .arg(&data)
        .args(["exec", "--json", "--model", &model, "second"])
        .output()
        .expect("run the second gantry");
    assert_eq!(second.status.code(), Some(2), "{second:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "it fails fast, without waiting for the lock: {:?}",
        started.elapsed()
    );
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains(&data.display().to_string()) && err.contains("in use"),
        "names the data dir: {err}"
    );
    assert!(second.stdout.is_empty(), "no thread started: {second:?}");

    // The first turn is unharmed and finishes.
    std::fs::write(s.workspace().join("release"), "").expect("release");
    seen.extend(rest(&stdout));
    assert_eq!(first.exit_code(), Some(0), "stderr: {}", drain(&stderr));
    let last = json(seen.last().expect("a last line"));
    assert_eq!(last["type"], "turn.completed", "{seen:#?}");
    assert_eq!(last["status"], "completed", "{last}");
    assert!(seen.iter().any(|l| l.contains("first done")), "{seen:#?}");

    // Only the first run left a thread.
    let list = s.run(&["threads", "list", "--json"]);
    assert!(list.status.success(), "{list:?}");
    let page: Value = serde_json::from_slice(&list.stdout).expect("JSON");
    let threads = page["threads"].as_array().expect("threads");
    assert_eq!(threads.len(), 1, "{page:#}");
}

/// `gantry serve` on `listen` with `extra` flags: its stderr lines up to and
/// including the one that says it serves; the process is stopped after.
fn serve_startup_lines(listen: &str, extra: &[&str]) -> Vec<String> {
    let s = Scratch::new();
    let mut child = s
        .gantry()
        .args([
            "serve",
            "--listen-addr",
            listen,
            "--storage-backend",
            "memory",
        ])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn gantry serve");
    let stderr = lines(child.stderr.take().expect("stderr"));
    let mut server = Proc(child);
    let seen = lines_until(&stderr, |l| {
        l.starts_with("gantry: serving a3s.code.agent.v1.CodeAgentService on ")
    });
    server.signal(Signal::SIGTERM);
    assert_eq!(server.exit_code(), Some(0), "a clean stop");
    seen
}

fn warns_unauthenticated(lines: &[String]) -> bool {
    lines.iter().any(|l| {
        l.contains("warning")
            && l.contains("without authentication")
            && l.contains("--auth-token-file")
    })
}

#[test]
fn serve_warns_when_it_listens_beyond_loopback_without_a_token() {
    let everywhere = serve_startup_lines("0.0.0.0:0", &[]);
    assert!(warns_unauthenticated(&everywhere), "{everywhere:#?}");
    assert!(
        everywhere
            .iter()
            .any(|l| l.contains("listening on 0.0.0.0:")),
        "the warning names the address: {everywhere:#?}"
    );

    let loopback = serve_startup_lines("127.0.0.1:0", &[]);
    assert!(!warns_unauthenticated(&loopback), "{loopback:#?}");

    let token = tempfile::NamedTempFile::new().expect("token file");
    std::fs::write(token.path(), "s3cret\n").expect("token");
    let path = token.path().to_str().expect("utf-8 path");
    let with_token = serve_startup_lines("0.0.0.0:0", &["--auth-token-file", path]);
    assert!(!warns_unauthenticated(&with_token), "{with_token:#?}");
}

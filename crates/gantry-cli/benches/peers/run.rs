//! One measured run of an agent, and the task's floor (the commands with no
//! agent).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gantry_testkit::MockLlm;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::agents::{self, Ready, Variant};

/// The `PATH` every run gets: the system's, nothing of the machine's user.
pub(crate) const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Model requests of the task: ten tool rounds and the final answer.
const REQUESTS: usize = 11;

/// What one verified run measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// Start of the process to its exit.
    pub wall: Duration,
    /// The largest resident set of any process of the run (`ru_maxrss`).
    pub peak_rss_kib: u64,
    /// Start of the process to its first model request.
    pub startup: Duration,
    /// From the first model request to the last, per tool round: the
    /// agent's time between a tool call and its next request, the command
    /// included.
    pub per_round: Duration,
    /// Commands that saw the profile's variable.
    pub profile_seen: usize,
}

/// A clean environment for `cmd`: the system `PATH`, a `HOME`, bash as the
/// login shell, and nothing else of the machine's.
pub(crate) fn clean_env(cmd: &mut Command, home: &Path) {
    cmd.env_clear()
        .env("PATH", PATH)
        .env("HOME", home)
        .env("SHELL", "/bin/bash")
        .env("LANG", "C.UTF-8");
}

/// Runs the task once in a fresh home and workspace under `dir`.
pub(crate) fn once(
    ready: &Ready,
    variant: Variant,
    no_snapshot: bool,
    dir: &Path,
) -> Result<Sample, String> {
    let _ = std::fs::remove_dir_all(dir);
    let home = dir.join("home");
    let ws = dir.join("ws");
    for d in [&home, &ws] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    variant
        .populate(&home)
        .map_err(|e| format!("cannot write the profile: {e}"))?;
    let llm = MockLlm::start(ready.script()).map_err(|e| format!("mock model: {e}"))?;
    ready
        .configure_home(&home, &llm)
        .map_err(|e| format!("cannot configure the home: {e}"))?;
    let log = dir.join("output.log");
    let out = std::fs::File::create(&log).map_err(|e| format!("log: {e}"))?;
    let err = out.try_clone().map_err(|e| format!("log: {e}"))?;
    let mut cmd = ready.command(&home, &ws, &llm, no_snapshot);
    cmd.stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        // Its own group, so whatever it leaves running is killed after it.
        .process_group(0);

    let started = Instant::now();
    let child = cmd.spawn().map_err(|e| format!("cannot start: {e}"))?;
    let (status, peak_rss_kib) = wait_with_rusage(child.id())?;
    let wall = started.elapsed();
    if let Ok(pgid) = i32::try_from(child.id()) {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    let tail = || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(6)..].join(" | ")
    };
    if status != 0 {
        return Err(format!("exit status {status}: {}", tail()));
    }
    let requests = llm.requests();
    if requests.len() != REQUESTS {
        return Err(format!(
            "{} model requests instead of {REQUESTS}: {}",
            requests.len(),
            tail()
        ));
    }
    let startup = requests[0].received_at.saturating_duration_since(started);
    let rounds = requests[REQUESTS - 1]
        .received_at
        .saturating_duration_since(requests[0].received_at);
    let profile_seen = verify(&ws)?;
    Ok(Sample {
        wall,
        peak_rss_kib,
        startup,
        per_round: rounds / (REQUESTS as u32 - 1),
        profile_seen,
    })
}

/// Checks the ten files the commands write; how many saw the profile.
fn verify(ws: &Path) -> Result<usize, String> {
    let mut seen = 0;
    for n in 1..=10 {
        let file = ws.join(format!("f{n}.txt"));
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("side effect missing: {}: {e}", file.display()))?;
        match text.trim_end() {
            t if t == format!("round {n} profile") => seen += 1,
            t if t == format!("round {n} bare") => {}
            t => return Err(format!("{} holds {t:?}", file.display())),
        }
    }
    Ok(seen)
}

/// Waits for `pid`; its exit status (128 + signal when killed) and the
/// peak RSS of it and its waited-for descendants, in KiB.
fn wait_with_rusage(pid: u32) -> Result<(i32, u64), String> {
    let pid = libc::pid_t::try_from(pid).map_err(|e| format!("pid: {e}"))?;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers are to live locals of the right types.
        let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if got == pid {
            break;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("wait4: {error}"));
        }
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    Ok((code, u64::try_from(usage.ru_maxrss).unwrap_or(0)))
}

/// The median time the ten commands take run one by one by `bash -c` with
/// no agent, in seconds.
pub(crate) fn floor(scratch: &Path, runs: usize) -> f64 {
    let mut times = Vec::new();
    for n in 0..=runs {
        let dir = scratch.join(format!("floor-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        let ws = dir.join("ws");
        if std::fs::create_dir_all(&ws).is_err() {
            continue;
        }
        let started = Instant::now();
        let all_ran = agents::commands().iter().all(|line| {
            let mut cmd = Command::new("bash");
            clean_env(&mut cmd, &dir);
            cmd.arg("-c")
                .arg(line)
                .current_dir(&ws)
                .stdin(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
        let took = started.elapsed();
        if all_ran && verify(&ws).is_ok() && n > 0 {
            times.push(took.as_secs_f64());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    crate::table::median(&mut times)
}

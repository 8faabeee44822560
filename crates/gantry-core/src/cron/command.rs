//! A command job's run: `sh -c COMMAND` in its own process group, stdout and
//! stderr captured separately (head and tail kept), killed with its whole
//! group on timeout or cancel, and also once it exits (so background
//! children it left do not outlive the run).

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use gantry_tools::{GroupGuard, HeadTail};
use gantry_types::cron::ExecutionStatus;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use super::outcome::{MAX_OUTPUT_BYTES, Outcome, fmt_duration};

/// After the group is killed, output still in the pipes is read for at most
/// this long; a process that escaped the group (`setsid`) while holding a
/// pipe must not hang the run.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

const READ_CHUNK: usize = 16 * 1024;

/// How the wait for the shell ended.
enum End {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

/// One pipe being captured.
struct Capture<R> {
    pipe: Option<R>,
    kept: HeadTail,
    buf: Vec<u8>,
}

impl<R: AsyncRead + Unpin> Capture<R> {
    fn new(pipe: Option<R>) -> Self {
        Self {
            pipe,
            kept: HeadTail::new(MAX_OUTPUT_BYTES),
            buf: vec![0; READ_CHUNK],
        }
    }

    fn open(&self) -> bool {
        self.pipe.is_some()
    }

    /// Reads once; EOF or an error closes the pipe. Pending forever when
    /// closed (guard with `open()` in a select).
    async fn read(&mut self) {
        let Some(pipe) = self.pipe.as_mut() else {
            return std::future::pending().await;
        };
        match pipe.read(&mut self.buf).await {
            Ok(0) | Err(_) => self.pipe = None,
            Ok(n) => self.kept.push(&self.buf[..n]),
        }
    }
}

/// Runs `command` in `cwd` (the server's directory when `None`), with `env`
/// added to the server's environment (minus its keys, see
/// [`gantry_tools::sandbox::child_env`]): with `bash -c` after the login
/// profile's `snapshot`, as agents' commands run, or with `sh -c` without one.
pub(super) async fn run_command(
    command: &str,
    cwd: Option<&str>,
    env: &BTreeMap<String, String>,
    snapshot: Option<&Path>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Outcome {
    let mut cmd = tokio::process::Command::new(if snapshot.is_some() { "bash" } else { "sh" });
    // The server's environment minus its keys, then the engine's variables.
    gantry_tools::sandbox::child_env::apply(cmd.as_std_mut(), env);
    // Not the runtime's /proc: what the job runs cannot read its keys.
    gantry_tools::sandbox::isolate(cmd.as_std_mut());
    if let Some(snapshot) = snapshot {
        cmd.env("BASH_ENV", snapshot);
    }
    cmd.arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Own group: one killpg reaches everything the command started.
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            let place = cwd.map(|d| format!(" in {d}")).unwrap_or_default();
            let shell = if snapshot.is_some() { "bash" } else { "sh" };
            return Outcome::failed(format!("could not start `{shell} -c`{place}: {e}"));
        }
    };
    let mut guard = GroupGuard::new(child.id());
    let mut out = Capture::new(child.stdout.take());
    let mut err = Capture::new(child.stderr.take());

    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let end = loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => break End::Cancelled,
            _ = &mut deadline => break End::TimedOut,
            status = child.wait() => match status {
                Ok(status) => break End::Exited(status),
                Err(e) => {
                    guard.kill();
                    return Outcome::failed(format!("could not wait for the command: {e}"));
                }
            },
            _ = out.read(), if out.open() => {}
            _ = err.read(), if err.open() => {}
        }
    };
    guard.kill();
    if !matches!(end, End::Exited(_)) {
        // SIGKILL was just sent, so this returns at once.
        let _ = child.wait().await;
    }

    // Drain what is left; EOF comes once every writer is dead.
    let grace = tokio::time::sleep(DRAIN_GRACE);
    tokio::pin!(grace);
    while out.open() || err.open() {
        tokio::select! {
            biased;
            _ = &mut grace => break,
            _ = out.read(), if out.open() => {}
            _ = err.read(), if err.open() => {}
        }
    }

    let (status, exit_code, error) = match end {
        End::Exited(status) => match (status.code(), status.signal()) {
            (Some(0), _) => (ExecutionStatus::Success, Some(0), None),
            (Some(code), _) => (
                ExecutionStatus::Failed,
                Some(code),
                Some(format!("the command exited with code {code}")),
            ),
            (None, Some(signal)) => (
                ExecutionStatus::Failed,
                None,
                Some(format!("the command was killed by signal {signal}")),
            ),
            (None, None) => (
                ExecutionStatus::Failed,
                None,
                Some("the command ended without an exit code".to_owned()),
            ),
        },
        End::TimedOut => (
            ExecutionStatus::Timeout,
            None,
            Some(format!(
                "timed out after {}; the command and its process group were killed",
                fmt_duration(timeout)
            )),
        ),
        End::Cancelled => (
            ExecutionStatus::Cancelled,
            None,
            Some("cancelled; the command and its process group were killed".to_owned()),
        ),
    };
    Outcome {
        status,
        exit_code,
        stdout: out.kept.finish(),
        stderr: err.kept.finish(),
        error,
        turn_id: None,
    }
}

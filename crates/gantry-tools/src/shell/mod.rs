//! `shell`: runs a bash command line in the workspace, in its own process
//! group, streaming merged stdout/stderr with a time limit and an output cap,
//! inside the OS sandbox of `ctx.sandbox` (see [`crate::sandbox`]). A command
//! whose sandbox cannot be enforced is not run.
//!
//! The user's login profile (PATH, version managers, functions, aliases)
//! applies to every command: from a snapshot taken once ([`snapshot`]) when
//! the context has [`ShellSnapshots`], else by running each command as
//! `bash -lc`, which costs the profile's time on every command and can leave
//! its lock files behind when a command is killed early.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use gantry_types::{ItemKind, ToolSpec};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use crate::common::parse_args;
use crate::sandbox::{self, PreparedSandbox};
use crate::workspace_path;
use crate::{Tool, ToolContext, ToolOutput, ToolStatus};

mod capture;
mod hosted;
pub mod snapshot;
#[cfg(target_os = "linux")]
mod spawn;

pub use snapshot::{Launch, ShellSnapshots};

/// After the shell is gone and its group killed, output still in the pipe is
/// read for at most this long. It only matters if a process escaped the group
/// (e.g. `setsid`) while holding the pipe; such a process must not hang the call.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Read buffer size for the merged output pipe.
const READ_CHUNK: usize = 64 * 1024;

/// The `shell` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShellTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShellArgs {
    command: String,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    workdir: Option<String>,
}

/// How the wait for the shell ended.
enum End {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

#[async_trait]
impl Tool for ShellTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "shell".into(),
            description: "Run a bash command line in the workspace (or `workdir`), with the \
                          user's login profile applied. stdin is empty; stdout and stderr are \
                          merged. Output is capped (head and tail kept). The command and \
                          anything it starts are killed on timeout."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The bash command line."},
                    "timeout_ms": {"type": "integer", "minimum": 1, "description": "Time limit in milliseconds (default: the runtime's shell timeout)."},
                    "workdir": {"type": "string", "description": "Directory to run in, relative to the workspace (default: the workspace root)."}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        }
    }

    fn start_item(&self, args: &Value, ctx: &ToolContext) -> ItemKind {
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let cwd = match args
            .get("workdir")
            .and_then(Value::as_str)
            .filter(|w| !w.trim().is_empty())
        {
            Some(w) => ctx.workspace.join(w),
            None => ctx.workspace.clone(),
        };
        ItemKind::CommandExecution {
            command: command.to_string(),
            cwd: cwd.display().to_string(),
            process_id: None,
            output: String::new(),
            exit_code: None,
            duration_ms: None,
        }
    }

    async fn run(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let started = Instant::now();
        let raw_command = args
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let fail = |cwd: &Path, msg: String| ToolOutput {
            status: ToolStatus::Error,
            model_output: msg.clone(),
            item: ItemKind::CommandExecution {
                command: raw_command.clone(),
                cwd: cwd.display().to_string(),
                process_id: None,
                output: msg,
                exit_code: None,
                duration_ms: Some(0),
            },
        };
        let parsed: ShellArgs = match parse_args("shell", &args) {
            Ok(a) => a,
            Err(msg) => return fail(&ctx.workspace, msg),
        };
        if parsed.command.trim().is_empty() {
            return fail(
                &ctx.workspace,
                "shell: `command` is empty; give a bash command line to run".into(),
            );
        }
        let timeout = match parsed.timeout_ms {
            Some(0) => {
                return fail(
                    &ctx.workspace,
                    "shell: `timeout_ms` must be at least 1".into(),
                );
            }
            Some(ms) => Duration::from_millis(ms),
            None => ctx.limits.shell_timeout,
        };
        // An empty workdir (small models send one) is the workspace.
        let workdir = parsed.workdir.as_deref().filter(|w| !w.trim().is_empty());
        let cwd = match workdir {
            None => ctx.workspace.clone(),
            Some(w) => match workspace_path::resolve(&ctx.workspace, w) {
                Ok(p) if p.abs.is_dir() => p.abs,
                Ok(p) => {
                    return fail(
                        &ctx.workspace,
                        format!(
                            "shell: workdir {:?} is not an existing directory in the workspace",
                            p.rel
                        ),
                    );
                }
                Err(e) => return fail(&ctx.workspace, format!("shell: workdir: {e}")),
            },
        };
        if let Some(runner) = &ctx.host.commands {
            return hosted::run(
                runner.as_ref(),
                &parsed.command,
                &cwd,
                timeout,
                &ctx,
                started,
            )
            .await;
        }
        let launch = match &ctx.shell_snapshots {
            Some(snapshots) => snapshots.launch(&ctx.env, &ctx.sandbox).await,
            None => Launch::Login(None),
        };
        // Gantry's environment minus its keys, then the context's variables.
        let mut env = sandbox::child_env::resolved(
            ctx.env
                .iter()
                .chain(ctx.minted_env.iter().map(|(k, v)| (k, v))),
        );
        if let Some((name, value)) = launch.env() {
            env.insert(name.into(), value.into());
        }
        // Built before the clone (it allocates and opens files, which the
        // child must not); off the async threads since it touches the disk.
        let jail = if ctx.sandbox.is_sandboxed() {
            let mut policy = ctx.sandbox.clone();
            // The snapshot lives in the data dir, which commands cannot read;
            // this command sources this one file of it.
            policy
                .protected_readable
                .extend(launch.file().map(Path::to_path_buf));
            policy.keep_visible.extend(sandbox::tools_in_view(&env));
            let workspace = ctx.workspace.clone();
            match tokio::task::spawn_blocking(move || sandbox::prepare(&policy, &workspace)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => return fail(&cwd, format!("shell: {e}")),
                Err(e) => return fail(&cwd, format!("shell: sandbox setup failed: {e}")),
            }
        } else {
            None
        };
        let sandboxed = jail.is_some();
        let ran = run_command(
            &parsed.command,
            &launch,
            env,
            &cwd,
            timeout,
            &ctx,
            jail,
            started,
        )
        .await;
        match ran {
            Ok(out) => match &launch {
                Launch::Login(Some(note)) => with_note_first(out, note),
                _ => out,
            },
            Err(e) if sandboxed => fail(
                &cwd,
                format!(
                    "shell: could not start bash in the {} sandbox: {e}",
                    ctx.sandbox.mode.as_str()
                ),
            ),
            Err(e) => fail(&cwd, format!("shell: could not run bash: {e}")),
        }
    }
}

/// Kills the process group when dropped, so a dropped `run` future (the
/// engine gave up on the call) leaves no processes behind. Public for other
/// runners of process groups (scheduled jobs).
pub struct GroupGuard {
    pgid: Option<Pid>,
}

impl GroupGuard {
    /// Guards the group led by `pid`, a child spawned with `process_group(0)`
    /// (`None`: the child is already gone, nothing to kill).
    pub fn new(pid: Option<u32>) -> Self {
        Self {
            pgid: pid.and_then(|p| i32::try_from(p).ok()).map(Pid::from_raw),
        }
    }

    /// Sends SIGKILL to the whole group, once.
    pub fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // ESRCH (group already gone) is the normal case after a clean exit.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A command's running `bash`.
enum Process {
    /// Started by tokio (`posix_spawn`): no sandbox to apply.
    Plain(tokio::process::Child),
    /// Cloned into its sandbox (see [`spawn`]).
    #[cfg(target_os = "linux")]
    Sandboxed(spawn::Child),
}

impl Process {
    fn id(&self) -> Option<u32> {
        match self {
            Process::Plain(child) => child.id(),
            #[cfg(target_os = "linux")]
            Process::Sandboxed(child) => Some(child.id()),
        }
    }

    /// Waits for the exit. Cancel-safe.
    async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        match self {
            Process::Plain(child) => child.wait().await,
            #[cfg(target_os = "linux")]
            Process::Sandboxed(child) => child.wait().await,
        }
    }
}

/// Starts `program` with `args`, exactly the variables of `env`, in `cwd`,
/// in a process group of its own, stdin empty, stdout and stderr to the
/// given fds (one fd twice for merged output), inside `sandbox` if given.
/// Dropping the result kills the process.
fn start(
    program: &OsStr,
    args: &[&str],
    env: BTreeMap<OsString, OsString>,
    cwd: &Path,
    stdout: OwnedFd,
    stderr: OwnedFd,
    sandbox: Option<&PreparedSandbox>,
) -> std::io::Result<Process> {
    if let Some(sandbox) = sandbox {
        #[cfg(target_os = "linux")]
        {
            let cmd = spawn::Command::new(program, args.iter().map(OsStr::new), env, cwd)?;
            let stdin = std::fs::File::open("/dev/null")?;
            return cmd
                .spawn(stdin.as_fd(), stdout.as_fd(), stderr.as_fd(), sandbox)
                .map(Process::Sandboxed);
        }
        #[cfg(not(target_os = "linux"))]
        match *sandbox {}
    }
    let mut cmd = tokio::process::Command::new(program);
    cmd.env_clear()
        .envs(env)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        // Own group: the whole tree (children, grandchildren) can be killed
        // with one killpg, and a terminal's signals do not reach it.
        .process_group(0)
        .kill_on_drop(true);
    let spawned = cmd.spawn();
    // The Command holds our copies of the write ends; drop them or the
    // pipes never report EOF.
    drop(cmd);
    spawned.map(Process::Plain)
}

/// What a command that ran to its end left.
pub(super) struct Ran {
    pub(super) status: ExitStatus,
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
}

/// Runs `program` as [`start`] does, stdout and stderr read apart, to its
/// end or for at most `limit` (`None`: it ran out of time). Its process
/// group is killed either way, so nothing it started outlives it.
pub(super) async fn run_to_end(
    program: &OsStr,
    args: &[&str],
    env: BTreeMap<OsString, OsString>,
    cwd: &Path,
    sandbox: Option<&PreparedSandbox>,
    limit: Duration,
) -> std::io::Result<Option<Ran>> {
    let (out_reader, out_writer) = std::io::pipe()?;
    let (err_reader, err_writer) = std::io::pipe()?;
    let mut child = start(
        program,
        args,
        env,
        cwd,
        out_writer.into(),
        err_writer.into(),
        sandbox,
    )?;
    let mut guard = GroupGuard::new(child.id());
    let read_all = |reader: std::io::PipeReader| async move {
        let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
        let mut bytes = Vec::new();
        pipe.read_to_end(&mut bytes).await?;
        Ok::<_, std::io::Error>(bytes)
    };
    let ran = async {
        // Both pipes at once: a child that fills one while we wait on the
        // other would never finish.
        let (stdout, stderr, status) =
            tokio::join!(read_all(out_reader), read_all(err_reader), child.wait());
        Ok::<_, std::io::Error>(Ran {
            status: status?,
            stdout: stdout?,
            stderr: stderr?,
        })
    };
    let ran = tokio::time::timeout(limit, ran).await;
    guard.kill();
    match ran {
        Ok(ran) => ran.map(Some),
        Err(_) => Ok(None),
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_command(
    command: &str,
    launch: &Launch,
    env: BTreeMap<OsString, OsString>,
    cwd: &Path,
    timeout: Duration,
    ctx: &ToolContext,
    sandbox: Option<PreparedSandbox>,
    started: Instant,
) -> std::io::Result<ToolOutput> {
    // One pipe for both stdout and stderr, like `2>&1`: the kernel keeps the
    // writes in the order they happened, which two pipes cannot.
    let (reader, writer) = std::io::pipe()?;
    let args = launch.args(command);
    let writer = OwnedFd::from(writer);
    let mut child = start(
        OsStr::new("bash"),
        &args,
        env,
        cwd,
        writer.try_clone()?,
        writer,
        sandbox.as_ref(),
    )?;
    let pid = child.id();
    let mut guard = GroupGuard::new(pid);
    if let Some(pid) = pid {
        // Before any output: whoever follows the command knows its process.
        (ctx.process_started)(pid).await;
    }
    let mut reader = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;

    let mut out = OutputCollector::new(ctx.limits.output_cap_bytes, ctx.output.clone());
    let mut buf = vec![0u8; READ_CHUNK];
    let mut eof = false;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);

    let end = loop {
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => break End::Cancelled,
            _ = &mut deadline => break End::TimedOut,
            status = child.wait() => break End::Exited(status?),
            read = reader.read(&mut buf), if !eof => match read {
                Ok(0) | Err(_) => eof = true,
                // A receiver that is behind holds the chunk back: the
                // timeout and an interrupt still end the command meanwhile.
                Ok(n) => tokio::select! {
                    biased;
                    () = out.push(&buf[..n]) => {}
                    _ = ctx.cancel.cancelled() => break End::Cancelled,
                    _ = &mut deadline => break End::TimedOut,
                },
            },
        }
    };

    // Kill the group in every case. After a normal exit this reaps background
    // jobs (`cmd &`) that would otherwise keep the pipe open and hang the
    // call until they finish; the agent's command is over, so are they.
    guard.kill();
    let status = match end {
        End::Exited(s) => Some(s),
        // SIGKILL was just sent, so this returns at once.
        End::TimedOut | End::Cancelled => child.wait().await.ok(),
    };

    // Drain what is left. EOF comes once every writer is dead, which also
    // means the killed processes have really exited.
    let grace = tokio::time::sleep(DRAIN_GRACE);
    tokio::pin!(grace);
    let already_cancelled = matches!(end, End::Cancelled);
    while !eof {
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled(), if !already_cancelled => break,
            _ = &mut grace => break,
            read = reader.read(&mut buf) => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => out.push(&buf[..n]).await,
            },
        }
    }

    let elapsed = started.elapsed();
    let mut output = out.finish().await;
    let exit_code = match end {
        End::Exited(_) => status.and_then(|s| s.code()),
        End::TimedOut | End::Cancelled => None,
    };
    let (status_kind, exit_line) = match end {
        End::Exited(_) => {
            let line = match (exit_code, status.and_then(|s| s.signal())) {
                (Some(c), _) => format!("Exit code: {c}"),
                (None, Some(sig)) => format!("Exit code: none (killed by signal {sig})"),
                (None, None) => "Exit code: unknown".to_string(),
            };
            (ToolStatus::Ok, line)
        }
        End::TimedOut => {
            let note = format!("command timed out after {}", fmt_secs(timeout));
            push_note(
                &mut output,
                &format!("[{note}; it was killed with its process group]"),
            );
            // Error, not Ok: the command did not finish, so its output is partial.
            (ToolStatus::Error, format!("Exit code: none ({note})"))
        }
        End::Cancelled => {
            push_note(
                &mut output,
                "[command interrupted; it was killed with its process group]",
            );
            (
                ToolStatus::Interrupted,
                "Exit code: none (interrupted)".to_string(),
            )
        }
    };
    let model_output = format!(
        "{exit_line}\nWall time: {}\nOutput:\n{output}",
        fmt_secs(elapsed)
    );
    Ok(ToolOutput {
        status: status_kind,
        model_output,
        item: ItemKind::CommandExecution {
            command: command.to_string(),
            cwd: cwd.display().to_string(),
            process_id: pid,
            output,
            exit_code,
            duration_ms: Some(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)),
        },
    })
}

/// `out` with `note` as its first line, for the model and in the item.
fn with_note_first(mut out: ToolOutput, note: &str) -> ToolOutput {
    out.model_output = format!("{note}\n{}", out.model_output);
    if let ItemKind::CommandExecution { output, .. } = &mut out.item {
        *output = format!("{note}\n{output}");
    }
    out
}

fn push_note(output: &mut String, note: &str) {
    if !output.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    output.push_str(note);
}

/// Seconds for humans: `5 s`, `0.3 s`.
fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{s:.1} s")
    }
}

/// Collects command output: streams deltas until the cap is reached, and
/// keeps the head and tail of everything for the final output.
struct OutputCollector {
    cap: usize,
    sink: crate::OutputSink,
    decoder: Utf8Stream,
    streamed: usize,
    streaming_stopped: bool,
    buffer: HeadTail,
}

impl OutputCollector {
    fn new(cap: usize, sink: crate::OutputSink) -> Self {
        Self {
            cap,
            sink,
            decoder: Utf8Stream::default(),
            streamed: 0,
            streaming_stopped: false,
            buffer: HeadTail::new(cap),
        }
    }

    /// Keeps `bytes` and streams them; waits until the sink has taken them.
    async fn push(&mut self, bytes: &[u8]) {
        self.buffer.push(bytes);
        if self.streaming_stopped {
            return;
        }
        let room = self.cap - self.streamed;
        if bytes.len() <= room {
            self.streamed += bytes.len();
            self.emit(bytes).await;
        } else {
            self.emit(&bytes[..room]).await;
            // A character cut by the cap is dropped rather than shown as U+FFFD.
            self.decoder.pending.clear();
            self.streamed = self.cap;
            self.streaming_stopped = true;
            (self.sink)(format!(
                "\n[... output exceeds {} bytes; live output stops here, the final output keeps the head and tail ...]\n",
                self.cap
            ))
            .await;
        }
    }

    async fn emit(&mut self, bytes: &[u8]) {
        let text = self.decoder.decode(bytes);
        if !text.is_empty() {
            (self.sink)(text).await;
        }
    }

    async fn finish(mut self) -> String {
        if !self.streaming_stopped {
            let rest = self.decoder.finish();
            if !rest.is_empty() {
                (self.sink)(rest).await;
            }
        }
        self.buffer.finish()
    }
}

/// Lossy UTF-8 decoding of a byte stream that never splits a character: an
/// incomplete sequence at the end of a chunk waits for the next chunk.
#[derive(Default)]
struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    fn decode(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let keep = incomplete_suffix_len(&self.pending);
        let done = self.pending.len() - keep;
        let text = String::from_utf8_lossy(&self.pending[..done]).into_owned();
        self.pending.drain(..done);
        text
    }

    fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

/// Length of a UTF-8 sequence cut off at the end of `bytes` (0 if none).
fn incomplete_suffix_len(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(3) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue; // continuation byte; look further back for the lead
        }
        let needed = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => 1,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

/// Number of leading UTF-8 continuation bytes (a character cut at the front).
fn leading_continuations(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|b| **b & 0xC0 == 0x80)
        .count()
}

/// The first `cap / 2` and last `cap - cap / 2` bytes of a stream; what is
/// dropped between them becomes a `[... N bytes truncated ...]` marker.
pub struct HeadTail {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
}

impl HeadTail {
    /// Keeps at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self {
            head_cap,
            tail_cap: cap - head_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    /// Adds the next bytes of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        let take = (self.head_cap - self.head.len()).min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        let rest = &bytes[take..];
        if rest.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + rest.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(rest);
        }
    }

    /// The kept text (lossy UTF-8), with the marker if bytes were dropped.
    pub fn finish(self) -> String {
        let mut tail: Vec<u8> = self.tail.into();
        let mut head = self.head;
        if head.len() + tail.len() == self.total {
            head.extend_from_slice(&tail);
            return String::from_utf8_lossy(&head).into_owned();
        }
        // Cut at character boundaries so the marker does not sit next to
        // replacement characters from split sequences.
        head.truncate(head.len() - incomplete_suffix_len(&head));
        tail.drain(..leading_continuations(&tail));
        let dropped = self.total - head.len() - tail.len();
        format!(
            "{}\n[... {dropped} bytes truncated ...]\n{}",
            String::from_utf8_lossy(&head),
            String::from_utf8_lossy(&tail)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_stream_keeps_split_characters_whole() {
        let mut d = Utf8Stream::default();
        let bytes = "héllo €".as_bytes();
        let mut out = String::new();
        for b in bytes {
            out.push_str(&d.decode(std::slice::from_ref(b)));
        }
        out.push_str(&d.finish());
        assert_eq!(out, "héllo €");
    }

    #[test]
    fn head_tail_marks_dropped_bytes() {
        let mut ht = HeadTail::new(10);
        ht.push(b"0123456789abcdefghij");
        assert_eq!(ht.finish(), "01234\n[... 10 bytes truncated ...]\nfghij");
        let mut ht = HeadTail::new(10);
        ht.push(b"0123");
        ht.push(b"456");
        assert_eq!(ht.finish(), "0123456");
    }
}

//! Starting a sandboxed command's `bash` without copying the runtime.
//!
//! std starts a child with `posix_spawn` (a `vfork`: the child borrows the
//! parent's memory until it execs) unless the command has a `pre_exec` hook.
//! The sandbox needs one, so every sandboxed command was a full `fork`: the
//! kernel copied the page tables of the whole runtime, and until `bash`
//! exec'd, each page either process wrote was copied or faulted again. That
//! was most of a command's cost in the runtime (≈ 1 ms of CPU a command on a
//! 14 MiB process).
//!
//! Here the child is cloned as `posix_spawn` clones it (`CLONE_VM |
//! CLONE_VFORK`, see `sandbox/clone.rs`), into namespaces of its own where
//! the machine allows them: it runs on a stack of its own in the parent's
//! memory, makes only raw system calls on data built before the clone (the
//! sandbox's namespace plan, ruleset and filter, `argv`, `envp`), and execs.
//! The calling thread waits until the exec; the runtime's other threads run
//! on. The child is waited for through a pidfd (`CLONE_PIDFD`), which needs
//! Linux 5.2, older than the Landlock ABI the sandbox requires.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::AtomicI32;

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use crate::sandbox::PreparedSandbox;
use crate::sandbox::clone::{clone_vfork, reap};
use crate::sandbox::namespaces::Failure;

/// Linux's highest signal number (`_NSIG - 1`).
const MAX_SIGNAL: libc::c_int = 64;

/// What to run: everything the child needs, as C strings built beforehand.
pub(super) struct Command {
    program: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    cwd: CString,
}

impl Command {
    /// `program` (looked up in `env`'s `PATH` unless it holds a `/`) with
    /// `args`, in `cwd`, with exactly the variables of `env`.
    pub(super) fn new<'a>(
        program: &'a OsStr,
        args: impl IntoIterator<Item = &'a OsStr>,
        env: impl IntoIterator<Item = (OsString, OsString)>,
        cwd: &Path,
    ) -> io::Result<Self> {
        let envp = env
            .into_iter()
            .map(|(k, v)| {
                let mut pair = k;
                pair.push("=");
                pair.push(v);
                c_string(pair.as_bytes())
            })
            .collect::<io::Result<Vec<_>>>()?;
        let path = envp
            .iter()
            .find_map(|kv| kv.to_bytes().strip_prefix(b"PATH="))
            .map(OsStr::from_bytes);
        let resolved = find_program(program, path).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{} not found in the command's PATH",
                    program.to_string_lossy()
                ),
            )
        })?;
        let argv = std::iter::once(program)
            .chain(args)
            .map(|a| c_string(a.as_bytes()))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Self {
            program: c_string(resolved.as_os_str().as_bytes())?,
            argv,
            envp,
            cwd: c_string(cwd.as_os_str().as_bytes())?,
        })
    }

    /// Starts the command in a process group of its own, stdin from
    /// `stdin`, stdout to `stdout` and stderr to `stderr` (the same fd for
    /// merged output), confined by `sandbox`. Returns once `bash` has been
    /// exec'd, or with the error of the step that failed (nothing runs then).
    pub(super) fn spawn(
        &self,
        stdin: BorrowedFd<'_>,
        stdout: BorrowedFd<'_>,
        stderr: BorrowedFd<'_>,
        sandbox: &PreparedSandbox,
    ) -> io::Result<Child> {
        // The child copies these onto 0, 1 and 2 in that order: a source
        // that is itself 0, 1 or 2 (a runtime started with stdio closed)
        // could be overwritten before its turn, so such fds are copied above.
        let stdin_high = above_stdio(stdin)?;
        let stdout_high = above_stdio(stdout)?;
        let stderr_high = above_stdio(stderr)?;
        let stdin = stdin_high.as_ref().map_or(stdin, AsFd::as_fd);
        let stdout = stdout_high.as_ref().map_or(stdout, AsFd::as_fd);
        let stderr = stderr_high.as_ref().map_or(stderr, AsFd::as_fd);

        let argv = null_terminated(&self.argv);
        let envp = null_terminated(&self.envp);
        let args = ChildArgs {
            program: self.program.as_ptr(),
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
            cwd: self.cwd.as_ptr(),
            stdio: [stdin.as_raw_fd(), stdout.as_raw_fd(), stderr.as_raw_fd()],
            sandbox,
            error: AtomicI32::new(0),
        };
        // SAFETY: `child_main` only reads `args`, which outlives the call
        // (CLONE_VFORK returns after the exec or exit; `argv`, `envp` and
        // `self` live until the end of this function), and writes nothing of
        // ours but `args.error`, an atomic.
        let (pid, pidfd) = unsafe {
            clone_vfork(
                sandbox.clone_flags(),
                child_main,
                (&raw const args).cast_mut().cast::<libc::c_void>(),
            )?
        };
        if let Some(failed) = Failure::load(&args.error) {
            // The child has exited (the exec did not happen): reap it.
            let _ = reap(pid, 0);
            return Err(failed);
        }
        let mut child = Child {
            pid,
            pidfd: None,
            status: None,
        };
        // SAFETY: an `OwnedFd` always gives the same open fd, closed only
        // when the `AsyncFd` drops it.
        let registered = unsafe { AsyncFd::register_with_interest(pidfd, Interest::READABLE) };
        // On error `child`'s drop kills and reaps it.
        child.pidfd = Some(registered.map_err(|e| e.into_parts().1)?);
        Ok(child)
    }
}

/// A started command.
pub(super) struct Child {
    pid: libc::pid_t,
    /// Readable once the process has exited; `None` only after `Drop` took it.
    pidfd: Option<AsyncFd<OwnedFd>>,
    /// Set once reaped; the pid is not reused before that.
    status: Option<ExitStatus>,
}

impl Child {
    /// The process id (and process group id).
    pub(super) fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Waits for the process to exit and reaps it. Cancel-safe.
    pub(super) async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.status {
                return Ok(status);
            }
            let Some(pidfd) = &self.pidfd else {
                return Err(io::Error::other("the child was dropped"));
            };
            let mut ready = pidfd.readable().await?;
            match reap(self.pid, libc::WNOHANG)? {
                Some(status) => self.status = Some(status),
                None => ready.clear_ready(),
            }
        }
    }
}

impl Drop for Child {
    /// Kills and reaps a child nobody waited for, as `kill_on_drop` does:
    /// reaped at once if it is gone already, else by a task that waits for
    /// it, so no zombie is left.
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        // SAFETY: kill with integers; the pid is ours and not yet reaped,
        // so it still names our child.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        if matches!(reap(self.pid, libc::WNOHANG), Ok(Some(_)) | Err(_)) {
            return;
        }
        let (pid, pidfd) = (self.pid, self.pidfd.take());
        match (tokio::runtime::Handle::try_current(), pidfd) {
            (Ok(handle), Some(pidfd)) => {
                handle.spawn(async move {
                    let _ = pidfd.readable().await;
                    let _ = reap(pid, 0);
                });
            }
            // Off the runtime: SIGKILL was sent, so the wait is short.
            _ => drop(reap(pid, 0)),
        }
    }
}

/// What the child reads; built by the parent before the clone.
struct ChildArgs<'a> {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    cwd: *const libc::c_char,
    /// What becomes the command's stdin, stdout and stderr.
    stdio: [RawFd; 3],
    sandbox: &'a PreparedSandbox,
    /// What failed ([`Failure`]), set by the child before it exits; 0 if it
    /// exec'd.
    error: AtomicI32,
}

/// The child, between the clone and the exec. It shares the parent's
/// memory while other threads of the parent run, so it allocates nothing,
/// takes no lock and cannot panic: raw system calls on `ChildArgs` only.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ChildArgs` the parent keeps alive until the
    // child has exec'd or exited (see `Command::spawn`).
    let args = unsafe { &*arg.cast::<ChildArgs<'_>>() };
    // SAFETY: see `exec`; the parent's memory is only read.
    let failure = unsafe { exec(args) };
    failure.store(&args.error);
    // SAFETY: `_exit` ends only this child (its own thread group), running
    // nothing of the parent's (no atexit handlers, no buffers flushed).
    unsafe { libc::_exit(127) }
}

/// Sets the child up and execs; returns what failed.
///
/// # Safety
/// Only in the cloned child of `Command::spawn`, with `args` valid.
unsafe fn exec(args: &ChildArgs<'_>) -> Failure {
    let errno = || {
        Failure::other(
            io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)
                .max(1),
        )
    };
    // SAFETY (the whole block): system calls on fds and C strings the parent
    // made for this child and keeps alive; no memory of ours is written.
    unsafe {
        // dup2 clears close-on-exec on the copies; the sources are above 2.
        for (to, from) in args.stdio.iter().enumerate() {
            if libc::dup2(*from, to as libc::c_int) < 0 {
                return errno();
            }
        }
        // Own group: the whole tree can be killed with one killpg, and a
        // terminal's signals do not reach it.
        if libc::setpgid(0, 0) != 0 {
            return errno();
        }
        // Before the directory, which may lie under a path mounted back.
        if let Err(failure) = args.sandbox.enter_namespaces() {
            return failure;
        }
        if libc::chdir(args.cwd) != 0 {
            return errno();
        }
        reset_signals();
        // After stdio, the group and the directory: the sandbox covers
        // exactly the exec of bash and on.
        if let Err(e) = args.sandbox.apply_in_child() {
            return Failure::other(e.raw_os_error().unwrap_or(libc::EPERM));
        }
        libc::execve(args.program, args.argv, args.envp);
    }
    errno()
}

/// Gives every signal with a handler its default action (the handlers are
/// the parent's code) and SIGPIPE too (Rust ignores it; bash pipelines need
/// it), then unblocks all signals, as std does for its children. Other
/// ignored signals stay ignored across the exec, as with std.
///
/// # Safety
/// Only in the cloned child, with every signal blocked.
unsafe fn reset_signals() {
    // SAFETY: sigaction and sigprocmask on locals.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        for signal in 1..=MAX_SIGNAL {
            let mut old: libc::sigaction = std::mem::zeroed();
            // glibc refuses its own internal signals (EINVAL): nothing to do.
            if libc::sigaction(signal, std::ptr::null(), &raw mut old) != 0 {
                continue;
            }
            let handled = old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN;
            if handled || (signal == libc::SIGPIPE && old.sa_sigaction == libc::SIG_IGN) {
                libc::sigaction(signal, &raw const default, std::ptr::null_mut());
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const none, std::ptr::null_mut());
    }
}

/// A copy of `fd` numbered 3 or above (close-on-exec) if `fd` is 0, 1 or 2.
fn above_stdio(fd: BorrowedFd<'_>) -> io::Result<Option<OwnedFd>> {
    if fd.as_raw_fd() > 2 {
        return Ok(None);
    }
    // SAFETY: F_DUPFD_CLOEXEC returns a new fd that we then own.
    let copy = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `copy` is a fresh fd nothing else owns.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(copy) }))
}

/// Pointers to `strings`, then a null pointer, as `execve` takes them.
fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a NUL byte in the command's arguments, environment or directory",
        )
    })
}

/// `program` as `execvp` would find it: itself if it holds a `/`, else the
/// first executable file of that name in `path` (`/bin:/usr/bin` without one).
fn find_program(program: &OsStr, path: Option<&OsStr>) -> Option<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(program));
    }
    let path = path.unwrap_or(OsStr::new("/bin:/usr/bin"));
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access reads a C string we own.
    let ok = unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0;
    ok && path.is_file()
}

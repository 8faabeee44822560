//! Cloning a child that borrows the runtime's memory until it execs, as
//! `posix_spawn` does (`CLONE_VM | CLONE_VFORK`), for the sandboxed
//! command's start (`shell/spawn.rs`) and the namespace probe.
//!
//! The child runs on a stack of its own in the parent's memory: it may only
//! make raw system calls on data built before the clone, then exec or
//! `_exit`. The calling thread waits until then; the runtime's other threads
//! run on. Every signal stays blocked across the clone, so no handler of the
//! runtime's can run on the child's stack.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{FromRawFd, OwnedFd};

/// The child's stack. It calls a few system call wrappers, the namespace
/// setup and the sandbox's `apply_in_child`; 64 KiB leaves ample room.
const STACK_SIZE: usize = 64 * 1024;

/// Runs `child(arg)` in a clone made with `CLONE_VM | CLONE_VFORK |
/// CLONE_PIDFD | SIGCHLD` plus `extra_flags` (new namespaces), and returns
/// once it has exec'd or exited: its pid (in our PID namespace) and a pidfd.
///
/// # Safety
/// `child` runs in our memory while our other threads run: it must only
/// read `arg` (which must stay valid until this returns) and write nothing
/// but atomics, allocate nothing, take no lock, and end in `execve` or
/// `_exit`.
pub(crate) unsafe fn clone_vfork(
    extra_flags: libc::c_int,
    child: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: *mut libc::c_void,
) -> io::Result<(libc::pid_t, OwnedFd)> {
    let mut stack: Vec<MaybeUninit<u8>> = Vec::with_capacity(STACK_SIZE);
    // The stack grows down from its end, which the ABI wants 16-byte aligned.
    let top = (stack.as_mut_ptr() as usize + STACK_SIZE) & !15;
    let mut pidfd: libc::c_int = -1;
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD;
    // A child that makes a user namespace makes the runtime dumpable for a
    // moment (`namespaces.rs`): one at a time, so that none turns the flag
    // back while another still needs it.
    static USER_NAMESPACE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = (extra_flags & libc::CLONE_NEWUSER != 0)
        .then(|| USER_NAMESPACE.lock().unwrap_or_else(|p| p.into_inner()));
    let pid = {
        // No signal handler may run in the child before it has reset them:
        // a handler would run on the child's stack in our memory.
        let _blocked = BlockedSignals::all()?;
        // SAFETY: the caller's contract covers `child` and `arg`;
        // CLONE_VFORK suspends this thread until the child has exec'd or
        // exited, so `stack` outlives its use. CLONE_PIDFD stores the pidfd
        // through the parent-tid argument.
        let pid = unsafe {
            libc::clone(
                child,
                top as *mut libc::c_void,
                flags | extra_flags,
                arg,
                &raw mut pidfd,
            )
        };
        // Read before the mask is restored, which may touch errno.
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        pid
    };
    // SAFETY: CLONE_PIDFD stored a new fd (close-on-exec) that nothing else
    // owns.
    Ok((pid, unsafe { OwnedFd::from_raw_fd(pidfd) }))
}

/// All signals blocked on this thread until dropped.
struct BlockedSignals {
    before: libc::sigset_t,
}

impl BlockedSignals {
    fn all() -> io::Result<Self> {
        // SAFETY: sigset operations and pthread_sigmask on locals.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&raw mut all);
            let mut before: libc::sigset_t = std::mem::zeroed();
            let rc = libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, &raw mut before);
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            Ok(Self { before })
        }
    }
}

impl Drop for BlockedSignals {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in `all`.
        unsafe {
            libc::pthread_sigmask(
                libc::SIG_SETMASK,
                &raw const self.before,
                std::ptr::null_mut(),
            );
        }
    }
}

/// Reaps `pid` (`waitpid`); `None` when `WNOHANG` finds it still running.
pub(crate) fn reap(
    pid: libc::pid_t,
    flags: libc::c_int,
) -> io::Result<Option<std::process::ExitStatus>> {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes the status into a local.
        let rc = unsafe { libc::waitpid(pid, &raw mut status, flags) };
        if rc == pid {
            return Ok(Some(std::process::ExitStatus::from_raw(status)));
        }
        if rc == 0 {
            return Ok(None);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

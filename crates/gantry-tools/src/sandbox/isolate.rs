//! PID and mount namespaces for the processes Gantry starts for the agent
//! outside the shell tool: language servers (confined as well, see
//! `confine.rs`), MCP stdio servers, scheduled jobs' commands. The last
//! two keep the runtime's rights, but not its `/proc`: like a sandboxed command
//! they run in a PID namespace of their own under a `/proc` of their own,
//! so neither they nor anything the model gets them to run (a build script
//! a language server runs, a tool an MCP server calls) can read Gantry's
//! environment, command line or memory.
//!
//! They are started by `std`/`tokio` (their stdio is piped for their own
//! protocols), so the namespaces are made in a `pre_exec` hook: the forked
//! child unshares them and forks once more; the second child, PID 1 of the
//! new namespace, mounts `/proc` and execs, while the first waits for it
//! and exits as it did, so the `Child` the caller holds sees its end. The
//! extra process costs one fork per server or job start, which is rare.

use std::io;
use std::os::unix::process::CommandExt;

use super::Namespaces;
use super::namespaces::{make_mounts_private, mount_proc, write_id_maps};

/// Makes `cmd` start in PID and mount namespaces of its own, with its own
/// `/proc`, where the machine allows them ([`Namespaces::probe`]); else it
/// starts as before.
pub fn isolate(cmd: &mut std::process::Command) {
    let kind = Namespaces::probe();
    let flags = match kind {
        Namespaces::Direct => libc::CLONE_NEWNS | libc::CLONE_NEWPID,
        Namespaces::User => libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID,
        Namespaces::Unavailable(_) => return,
    };
    // Built before the fork: the hook may not allocate.
    // SAFETY: getuid/getgid have no failure mode.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let maps = matches!(kind, Namespaces::User).then(|| {
        (
            format!("{uid} {uid} 1").into_bytes(),
            format!("{gid} {gid} 1").into_bytes(),
        )
    });
    // SAFETY: the hook runs in the forked child before exec and only makes
    // system calls on memory built above (see `enter`).
    unsafe {
        cmd.pre_exec(move || enter(flags, maps.as_ref()));
    }
}

/// In the forked child: unshares the namespaces and forks PID 1 of the new
/// one, which returns to exec; this process waits for it and exits alike.
fn enter(flags: libc::c_int, maps: Option<&(Vec<u8>, Vec<u8>)>) -> io::Result<()> {
    // SAFETY (the whole body): system calls on locals and on the bytes
    // built before the fork; no allocation, no lock.
    unsafe {
        if libc::unshare(flags) != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some((uid_map, gid_map)) = maps {
            // A non-dumpable process's `/proc` files belong to root; this
            // forked child has memory of its own, and exec resets the flag.
            libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
            write_id_maps(uid_map, gid_map).map_err(|()| io::Error::last_os_error())?;
        }
        make_mounts_private().map_err(|()| io::Error::last_os_error())?;
        let pid = libc::fork();
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // PID 1 of the new namespace. It dies with the process that
            // waits for it, so killing that (as `kill_on_drop` does) ends
            // the whole namespace.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            mount_proc().map_err(|()| io::Error::last_os_error())?;
            return Ok(());
        }
        // The waiter. Close everything but stdio, std's exec-error pipe
        // among it: the caller's `spawn` returns once PID 1 has exec'd (its
        // copy closes on exec) or reported why not, never waiting on us.
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        let mut status = 0;
        while libc::waitpid(pid, &raw mut status, 0) < 0 {
            if *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

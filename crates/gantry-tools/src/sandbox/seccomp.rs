//! The seccomp filter that keeps sandboxed commands off the network.
//!
//! `socket(2)` fails with `EPERM` for every address family but `AF_UNIX`:
//! no TCP, UDP, raw or packet sockets (the runtime may run as root, where
//! raw sockets would otherwise work), no netlink (a root command could
//! otherwise reconfigure the host's network). io_uring is denied because
//! `IORING_OP_SOCKET` creates sockets without the `socket` system call, out
//! of seccomp's sight. Sockets are never inherited: the runtime's own are
//! close-on-exec. Everything else is allowed; the filesystem is Landlock's job.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use super::SandboxError;

/// A compiled seccomp program, ready to install in a command's child.
pub(super) struct Filter {
    program: Vec<libc::sock_filter>,
    /// `program.len()`, checked to fit `sock_fprog::len` when built.
    len: u16,
}

impl Filter {
    /// Installs the filter on the calling thread (the single-threaded child
    /// before its `exec`). One system call on memory built before the
    /// child was cloned. `no_new_privs` must already be set.
    pub(super) fn install(&self) -> std::io::Result<()> {
        let prog = libc::sock_fprog {
            len: self.len,
            // The kernel only reads the program (copy_from_user); the `*mut`
            // is the C struct's type, not a licence to write.
            filter: self.program.as_ptr().cast_mut(),
        };
        // SAFETY: `prog` points at `self.program`, which outlives the call,
        // and its length is exactly `len`; the kernel copies the program
        // and keeps no reference to our memory.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0u32,
                &prog as *const libc::sock_fprog,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

/// On x86_64 the x32 ABI reaches the same system calls under numbers with
/// this bit set, with the same audit arch; they must be denied as well.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// The network-denying filter for this machine's architecture, built once:
/// it never changes, and every sandboxed command without network needs it.
pub(super) fn deny_network() -> Result<&'static Filter, SandboxError> {
    static FILTER: OnceLock<Result<Filter, SandboxError>> = OnceLock::new();
    FILTER
        .get_or_init(build_deny_network)
        .as_ref()
        .map_err(Clone::clone)
}

fn build_deny_network() -> Result<Filter, SandboxError> {
    let setup = |e: seccompiler::BackendError| SandboxError::Setup(format!("seccomp filter: {e}"));
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(setup)?;

    let not_unix = SeccompRule::new(vec![
        SeccompCondition::new(
            0,
            // `domain` is an int: compare the low 32 bits only.
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(setup)?,
    ])
    .map_err(setup)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut deny = |nr: i64, chain: Vec<SeccompRule>| {
        #[cfg(target_arch = "x86_64")]
        rules.insert(nr | X32_SYSCALL_BIT, chain.clone());
        // An empty chain matches the call whatever its arguments.
        rules.insert(nr, chain);
    };
    deny(libc::SYS_socket, vec![not_unix]);
    deny(libc::SYS_io_uring_setup, Vec::new());
    deny(libc::SYS_io_uring_enter, Vec::new());
    deny(libc::SYS_io_uring_register, Vec::new());

    // A call from another architecture's ABI (32-bit x86 on x86_64) kills
    // the process: its numbering differs, so the rules above cannot vouch
    // for it.
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(setup)?;
    let program: seccompiler::BpfProgram = filter.try_into().map_err(setup)?;
    let len = u16::try_from(program.len())
        .map_err(|_| SandboxError::Setup("seccomp filter: program too long".into()))?;
    // Same layout, but seccompiler has its own type; copy field by field
    // rather than transmute.
    let program = program
        .iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect();
    Ok(Filter { program, len })
}

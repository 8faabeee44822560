//! Whether this machine can enforce the sandbox.

use gantry_types::SandboxMode;

use super::SandboxError;

/// What the running kernel can enforce. The daemon and CLI probe this at
/// start: a sandboxed mode that cannot be enforced must stop the start
/// ([`SandboxSupport::check`] fails) unless the user explicitly chose
/// `danger-full-access`. The `shell` tool checks again for every sandboxed
/// command and refuses to run it rather than run it unsandboxed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSupport {
    /// The Landlock ABI version the kernel reports (`0`: no Landlock, or it
    /// is disabled, or this is not Linux).
    pub landlock_abi: u32,
    /// Whether seccomp filters that return an errno can be installed, for an
    /// architecture the filter can be built for.
    pub seccomp: bool,
    /// Why sandboxed modes cannot be enforced; `None` when they can.
    pub problem: Option<String>,
    /// Why sandboxed commands cannot have PID and mount namespaces of their
    /// own (so they see the runtime's processes under `/proc` and share the
    /// temp dir); `None` when they do. Landlock and seccomp still confine
    /// them either way.
    pub namespace_problem: Option<String>,
}

impl SandboxSupport {
    /// The oldest Landlock ABI accepted: 3 (Linux 6.2), the first that
    /// controls truncation, without which a command could empty any file it
    /// can read.
    pub const MIN_LANDLOCK_ABI: u32 = 3;

    /// Probes the running kernel. Cheap (two system calls on Linux; the
    /// namespaces are tried once per process), so the shell tool calls it
    /// for every sandboxed command.
    pub fn probe() -> Self {
        probe_os()
    }

    /// Whether `read-only` and `workspace-write` can be enforced.
    pub fn is_enforceable(&self) -> bool {
        self.problem.is_none()
    }

    /// `Ok` when `mode` can be enforced here (`danger-full-access` always
    /// can); otherwise the error to show the user, which names what is
    /// missing and the explicit way out.
    pub fn check(&self, mode: SandboxMode) -> Result<(), SandboxError> {
        match (&self.problem, mode) {
            (_, SandboxMode::DangerFullAccess) | (None, _) => Ok(()),
            (Some(reason), _) => Err(SandboxError::Unavailable {
                mode: mode.as_str(),
                reason: reason.clone(),
            }),
        }
    }
}

#[cfg(target_os = "linux")]
fn probe_os() -> SandboxSupport {
    let landlock_abi = u32::try_from(super::landlock::kernel_abi()).unwrap_or(0);
    let arch_ok = seccompiler::TargetArch::try_from(std::env::consts::ARCH).is_ok();
    let errno_action: u32 = libc::SECCOMP_RET_ERRNO;
    // SAFETY: seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &action) only reads the
    // u32 behind the pointer, which lives on this stack frame for the call.
    let seccomp_ok = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0u32,
            &errno_action as *const u32,
        )
    } == 0;
    let seccomp = arch_ok && seccomp_ok;

    let mut problems = Vec::new();
    if landlock_abi == 0 {
        problems.push(
            "the kernel has no Landlock (needs Linux 6.2+ with `landlock` in the `lsm=` list, \
             and no container profile blocking its system calls)"
                .to_string(),
        );
    } else if landlock_abi < SandboxSupport::MIN_LANDLOCK_ABI {
        problems.push(format!(
            "the kernel's Landlock ABI is {landlock_abi}, {} or newer is needed (Linux 6.2+)",
            SandboxSupport::MIN_LANDLOCK_ABI
        ));
    }
    if !arch_ok {
        problems.push(format!(
            "the network filter is not built for {}",
            std::env::consts::ARCH
        ));
    } else if !seccomp_ok {
        problems.push("the kernel does not offer seccomp filters".to_string());
    }
    let namespace_problem = match super::Namespaces::probe() {
        super::Namespaces::Unavailable(why) => Some(why.clone()),
        super::Namespaces::Direct | super::Namespaces::User => None,
    };
    SandboxSupport {
        landlock_abi,
        seccomp,
        problem: (!problems.is_empty()).then(|| problems.join("; ")),
        namespace_problem,
    }
}

#[cfg(not(target_os = "linux"))]
fn probe_os() -> SandboxSupport {
    SandboxSupport {
        landlock_abi: 0,
        seccomp: false,
        problem: Some(format!(
            "the OS sandbox is only implemented on Linux, not {}",
            std::env::consts::OS
        )),
        namespace_problem: Some("namespaces are Linux's".to_owned()),
    }
}

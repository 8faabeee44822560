//! The OS sandbox for shell commands.
//!
//! A [`SandboxPolicy`] says what a command may touch; the `shell` tool
//! applies it to the spawned `bash` between its clone and its `exec`
//! (`shell/spawn.rs`), so the command
//! and everything it starts inherit it and cannot drop it.
//!
//! On Linux:
//!
//! - Filesystem: Landlock (ABI [`SandboxSupport::MIN_LANDLOCK_ABI`] or newer,
//!   so that truncation is covered too). Everything is readable and
//!   executable except [`SandboxPolicy::readable_denied`]; only the writable
//!   roots (and `/dev/null`-style device files) are writable. Denied accesses
//!   fail with `EACCES` ("Permission denied") in the command's own output.
//!   On kernels with Landlock ABI 6+, signals to processes outside the
//!   sandbox (the runtime itself, other users' work) are denied too.
//! - Network: a seccomp filter makes `socket(2)` fail with `EPERM` for every
//!   address family except `AF_UNIX` (local tooling keeps working), and
//!   denies io_uring, which could create sockets behind seccomp's back.
//!
//! Nothing is ever "best effort" in a way that matters: when the kernel
//! cannot enforce a sandboxed mode, the command is refused, never run
//! unsandboxed. [`SandboxSupport::probe`] lets the daemon or CLI refuse to
//! start in a sandboxed mode up front unless the user explicitly chose
//! `danger-full-access`.
//!
//! Elsewhere (macOS, BSDs) nothing is implemented yet: sandboxed modes are
//! reported as not enforceable and commands in them are refused.

use std::path::{Path, PathBuf};

pub use gantry_types::SandboxMode;

pub mod child_env;
#[cfg(target_os = "linux")]
pub(crate) mod clone;
#[cfg(target_os = "linux")]
mod confine;
#[cfg(target_os = "linux")]
mod isolate;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
pub(crate) mod namespaces;
mod private_tmp;
#[cfg(target_os = "linux")]
mod seccomp;
mod support;

#[cfg(target_os = "linux")]
pub use confine::confine;
#[cfg(target_os = "linux")]
pub use isolate::isolate;
#[cfg(target_os = "linux")]
pub use namespaces::{NAMESPACES_VAR, Namespaces};

/// Off Linux there are no namespaces: `cmd` starts as it is.
#[cfg(not(target_os = "linux"))]
pub fn isolate(_cmd: &mut std::process::Command) {}

/// Off Linux no sandboxed mode is enforceable: refused as a command is.
#[cfg(not(target_os = "linux"))]
pub fn confine(
    _cmd: &mut std::process::Command,
    policy: &SandboxPolicy,
    workspace: &Path,
) -> Result<(), SandboxError> {
    prepare(policy, workspace).map(|_| ())
}
pub use private_tmp::PrivateTemps;
pub use support::SandboxSupport;

/// What a thread's shell commands may touch.
///
/// `mode` decides which of the other fields matter:
///
/// | mode | reads | writes | network |
/// |---|---|---|---|
/// | `read-only` | all but `readable_denied` | none | denied (`network` ignored) |
/// | `workspace-write` | all but `readable_denied` | the workspace + `writable_roots` | `network` |
/// | `danger-full-access` | all | all | all (other fields ignored) |
///
/// Under every sandboxed mode the device files `/dev/null`, `/dev/zero`,
/// `/dev/full` and `/dev/tty` stay writable, since so much tooling writes
/// to them. Nothing else is: not `/dev/shm` (POSIX shared memory, e.g.
/// Python's multiprocessing locks), not the user's caches and history files
/// (login scripts that write there print errors; the command still runs);
/// add such paths to `writable_roots` if a thread needs them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SandboxPolicy {
    /// The mode.
    pub mode: SandboxMode,
    /// Directories (or files) writable under `workspace-write`; ignored by
    /// the other modes. The call's workspace is always writable under
    /// `workspace-write`, listed here or not. Paths that do not exist when a
    /// command starts are skipped (which only takes rights away).
    pub writable_roots: Vec<PathBuf>,
    /// Paths sandboxed commands may not read (files, or directories with
    /// everything below them). Empty by default, matching the modes'
    /// contract "read anything"; add e.g. `~/.ssh` or `~/.aws` to keep
    /// secrets away from the model.
    ///
    /// Landlock can only grant, never carve out, so a denied path is
    /// enforced by granting read access to every sibling of it and of each
    /// of its ancestors, and only directory listing to the ancestors
    /// themselves. Consequences: file contents under a denied path cannot be
    /// read or executed, but names can still be listed and `stat`ed (listing
    /// is inherited from the ancestors; Landlock does not cover `stat`);
    /// files created in an ancestor after the command starts (a new file in
    /// `~` when `~/.ssh` is denied) are not readable by that command; a hard
    /// link to a denied file placed elsewhere beforehand is readable. Paths
    /// that do not exist when the command starts are ignored. A denied path
    /// inside a writable root is an error (the writable root would grant it
    /// right back).
    pub readable_denied: Vec<PathBuf>,
    /// Paths kept from sandboxed commands as far as the other fields allow:
    /// the engine's data dir (its database holds every thread's keys) and
    /// configuration holding keys. Denied like `readable_denied`, except
    /// that the call's workspace, the writable roots and
    /// `protected_readable` stay readable when they lie inside (only the
    /// rest of the tree around them is denied), and a protected path inside
    /// a writable root is left alone with a warning (the root grants it
    /// anyway) instead of failing the command.
    pub protected: Vec<PathBuf>,
    /// Paths inside `protected` that stay readable (agents' installed
    /// skills, whose scripts commands run).
    pub protected_readable: Vec<PathBuf>,
    /// Whether sandboxed commands may use the network (`workspace-write`
    /// only: `read-only` never may, `danger-full-access` always may).
    pub network: bool,
    /// The thread's private temp dir (created when first needed, mode
    /// 0700): where commands have their own namespaces, it is what they see
    /// at `/tmp` (and `$TMPDIR`), writable, instead of the shared one, and
    /// a temp dir among `writable_roots` is taken to mean this one. `None`:
    /// the temp dirs are shared.
    pub private_tmp: Option<PathBuf>,
    /// Paths beneath the real temp dir that commands still see (read-only)
    /// when it is replaced by `private_tmp`: `$HOME` and `PATH` entries, say.
    /// The workspace, the writable roots and `protected_readable` are kept
    /// in view without being listed here.
    pub keep_visible: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// The default policy for `mode` in `workspace`: under `workspace-write`
    /// the workspace and the temp dir ([`std::env::temp_dir`], i.e. `$TMPDIR`
    /// or `/tmp`) are writable; no read is denied; no network.
    pub fn new(mode: SandboxMode, workspace: &Path) -> Self {
        let writable_roots = match mode {
            SandboxMode::WorkspaceWrite => vec![workspace.to_path_buf(), std::env::temp_dir()],
            SandboxMode::ReadOnly | SandboxMode::DangerFullAccess => Vec::new(),
        };
        Self {
            mode,
            writable_roots,
            readable_denied: Vec::new(),
            protected: Vec::new(),
            protected_readable: Vec::new(),
            network: matches!(mode, SandboxMode::DangerFullAccess),
            private_tmp: None,
            keep_visible: Vec::new(),
        }
    }

    /// No sandbox at all: what [`crate::ToolContext::new`] uses.
    pub fn danger_full_access() -> Self {
        Self {
            mode: SandboxMode::DangerFullAccess,
            writable_roots: Vec::new(),
            readable_denied: Vec::new(),
            protected: Vec::new(),
            protected_readable: Vec::new(),
            network: true,
            private_tmp: None,
            keep_visible: Vec::new(),
        }
    }

    /// Whether commands run inside an OS sandbox (any mode but
    /// `danger-full-access`).
    pub fn is_sandboxed(&self) -> bool {
        !matches!(self.mode, SandboxMode::DangerFullAccess)
    }

    /// Whether tools may write files at all (`false` under `read-only`). The
    /// file tools check this; where they may write is the workspace rule.
    pub fn allows_writes(&self) -> bool {
        !matches!(self.mode, SandboxMode::ReadOnly)
    }

    /// Whether commands may open network sockets, after the mode's rules.
    pub fn allows_network(&self) -> bool {
        match self.mode {
            SandboxMode::ReadOnly => false,
            SandboxMode::WorkspaceWrite => self.network,
            SandboxMode::DangerFullAccess => true,
        }
    }
}

/// What a command's environment `env` needs to stay in view when the temp
/// dir is replaced by a private one ([`SandboxPolicy::keep_visible`]): its
/// `$HOME` and the directories of its `PATH`, where its tools are.
pub fn tools_in_view(
    env: &std::collections::BTreeMap<std::ffi::OsString, std::ffi::OsString>,
) -> Vec<PathBuf> {
    let home = env.get(std::ffi::OsStr::new("HOME")).map(PathBuf::from);
    let path = env
        .get(std::ffi::OsStr::new("PATH"))
        .map(|p| std::env::split_paths(p).collect::<Vec<_>>())
        .unwrap_or_default();
    home.into_iter()
        .chain(path)
        .filter(|p| p.is_absolute())
        .collect()
}

/// Why a sandboxed command could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// This machine cannot enforce the mode; the command was not run.
    #[error(
        "the {mode} sandbox cannot be enforced on this machine ({reason}); the command was not \
         run. Use danger-full-access only if running unsandboxed is really intended"
    )]
    Unavailable {
        /// The requested mode (`read-only`, `workspace-write`).
        mode: &'static str,
        /// What is missing.
        reason: String,
    },
    /// The policy contradicts itself.
    #[error("invalid sandbox policy: {0}")]
    InvalidPolicy(String),
    /// Building the rules failed.
    #[error("could not set up the sandbox: {0}")]
    Setup(String),
}

/// Rules built before the child is cloned, applied in it by
/// [`PreparedSandbox::apply_in_child`].
#[cfg(target_os = "linux")]
pub(crate) struct PreparedSandbox {
    /// The Landlock ruleset (close-on-exec, so `bash` does not inherit it).
    ruleset: std::os::fd::OwnedFd,
    /// The seccomp program, when the network is denied.
    filter: Option<&'static seccomp::Filter>,
    /// The command's own namespaces, where the machine allows them.
    namespaces: Option<namespaces::Plan>,
}

/// Uninhabited off Linux: [`prepare`] never returns one there.
#[cfg(not(target_os = "linux"))]
pub(crate) enum PreparedSandbox {}

/// Builds the rules for running a command under `policy` in `workspace`.
/// `Ok(None)` means no sandbox (`danger-full-access`). Blocking (opens the
/// paths the rules name); cheap unless `readable_denied` is long.
pub(crate) fn prepare(
    policy: &SandboxPolicy,
    workspace: &Path,
) -> Result<Option<PreparedSandbox>, SandboxError> {
    if !policy.is_sandboxed() {
        return Ok(None);
    }
    let support = SandboxSupport::probe();
    support.check(policy.mode)?;
    prepare_enforceable(policy, workspace).map(Some)
}

#[cfg(target_os = "linux")]
fn prepare_enforceable(
    policy: &SandboxPolicy,
    workspace: &Path,
) -> Result<PreparedSandbox, SandboxError> {
    let canon = |p: &PathBuf| std::fs::canonicalize(p).ok();
    let private_tmp = policy
        .private_tmp
        .as_deref()
        .filter(|_| Namespaces::probe().available());
    // With a private temp dir, a temp dir among the writable roots means it.
    let temp_dirs: Vec<PathBuf> = match private_tmp {
        Some(_) => [PathBuf::from("/tmp"), std::env::temp_dir()]
            .iter()
            .filter_map(canon)
            .collect(),
        None => Vec::new(),
    };
    let mut writable = Vec::new();
    if matches!(policy.mode, SandboxMode::WorkspaceWrite) {
        let roots = std::iter::once(workspace).chain(policy.writable_roots.iter().map(|p| &**p));
        // A root that does not exist cannot be opened for a rule; skipping
        // it only takes rights away.
        writable.extend(
            roots
                .filter_map(|p| std::fs::canonicalize(p).ok())
                .filter(|p| p == workspace || !temp_dirs.contains(p)),
        );
    }
    let mut denied = Vec::new();
    for path in &policy.readable_denied {
        let Ok(canon) = std::fs::canonicalize(path) else {
            continue; // nothing there to read now; see the field's docs
        };
        if let Some(root) = writable.iter().find(|w| canon.starts_with(w)) {
            return Err(SandboxError::InvalidPolicy(format!(
                "{} is in readable_denied but inside the writable root {}, which grants it",
                canon.display(),
                root.display()
            )));
        }
        denied.push(canon);
    }
    let protected: Vec<PathBuf> = policy.protected.iter().filter_map(canon).collect();
    let readable: Vec<PathBuf> = policy.protected_readable.iter().filter_map(canon).collect();

    let namespaces = {
        let workspace_writable = matches!(policy.mode, SandboxMode::WorkspaceWrite);
        let visible: Vec<namespaces::Visible> =
            std::iter::once((canon(&workspace.to_path_buf()), workspace_writable))
                .chain(writable.iter().map(|w| (Some(w.clone()), true)))
                .chain(readable.iter().map(|r| (Some(r.clone()), false)))
                .chain(policy.keep_visible.iter().map(|k| (canon(k), false)))
                .filter_map(|(path, writable)| {
                    Some(namespaces::Visible {
                        path: path?,
                        writable,
                    })
                })
                .collect();
        let hidden: Vec<PathBuf> = denied.iter().chain(&protected).cloned().collect();
        namespaces::Plan::build(&namespaces::Layout {
            private_tmp,
            visible: &visible,
            hidden: &hidden,
        })?
    };
    if namespaces.is_some()
        && let Some(private) = private_tmp.and_then(|p| std::fs::canonicalize(p).ok())
    {
        writable.push(private);
    }

    let keep: Vec<PathBuf> = std::iter::once(workspace.to_path_buf())
        .filter_map(|p| canon(&p))
        .chain(readable.iter().cloned())
        .chain(writable.iter().cloned())
        .collect();
    for path in protected {
        if let Some(root) = writable.iter().find(|w| path.starts_with(w)) {
            // In a namespace of its own the command finds it covered.
            if namespaces.is_none() {
                warn_unprotected(&path, root);
            }
            continue;
        }
        expand_protected(&path, &keep, &mut denied);
    }
    let ruleset = landlock::build_ruleset(policy.mode.as_str(), &writable, &denied)?;
    let filter = if policy.allows_network() {
        None
    } else {
        Some(seccomp::deny_network()?)
    };
    Ok(PreparedSandbox {
        ruleset,
        filter,
        namespaces,
    })
}

/// Adds to `denied` what keeps `path` (canonical) unreadable while every
/// path of `keep` (canonical) stays readable: `path` itself when nothing to
/// keep lies inside it, else, around the kept paths, its other entries.
/// Symlinks inside are skipped: a link is no data, and denying its target
/// would deny whatever it points to.
#[cfg(target_os = "linux")]
fn expand_protected(path: &Path, keep: &[PathBuf], denied: &mut Vec<PathBuf>) {
    if keep.iter().any(|k| path.starts_with(k)) {
        return;
    }
    if !keep.iter().any(|k| k.starts_with(path)) {
        denied.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| !t.is_symlink()) {
            expand_protected(&entry.path(), keep, denied);
        }
    }
}

/// Warns, once per path, that `path` stays readable to commands because it
/// lies inside the writable root `root`.
#[cfg(target_os = "linux")]
fn warn_unprotected(path: &Path, root: &Path) {
    static WARNED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut warned = WARNED.lock().unwrap_or_else(|p| p.into_inner());
    if !warned.iter().any(|w| w == path) {
        warned.push(path.to_path_buf());
        tracing::warn!(
            "{} lies inside the writable root {}, so sandboxed commands can read it; \
             move it (e.g. the data dir) out of the workspace and the temp dir",
            path.display(),
            root.display()
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn prepare_enforceable(
    policy: &SandboxPolicy,
    _workspace: &Path,
) -> Result<PreparedSandbox, SandboxError> {
    // `check` already refused: no sandboxed mode is enforceable here.
    Err(SandboxError::Unavailable {
        mode: policy.mode.as_str(),
        reason: "the OS sandbox is only implemented on Linux".into(),
    })
}

/// `CAP_SYS_PTRACE` (linux/capability.h), which the libc crate lacks.
#[cfg(target_os = "linux")]
const CAP_SYS_PTRACE: libc::c_ulong = 19;

impl PreparedSandbox {
    /// The `CLONE_NEW*` flags the command's child is cloned with (none
    /// where the machine has no namespaces for it).
    #[cfg(target_os = "linux")]
    pub(crate) fn clone_flags(&self) -> libc::c_int {
        self.namespaces
            .as_ref()
            .map_or(0, namespaces::Plan::clone_flags)
    }

    /// Sets up the child's namespaces (see [`namespaces`]): first in the
    /// child cloned with [`Self::clone_flags`], before its `chdir`, since
    /// the directory may lie under a path mounted back.
    ///
    /// # Safety
    /// Only in that child; see [`Self::apply_in_child`] for its limits.
    #[cfg(target_os = "linux")]
    pub(crate) unsafe fn enter_namespaces(&self) -> Result<(), namespaces::Failure> {
        match &self.namespaces {
            // SAFETY: the caller is that child.
            Some(plan) => unsafe { plan.enter() },
            None => Ok(()),
        }
    }

    /// Confines the calling process. Meant for the child between its clone
    /// and `exec` (`shell/spawn.rs`), which shares the parent's memory: it
    /// only makes raw system calls on memory built before the clone, writes
    /// none of it, allocates nothing and takes no lock. On error the exec
    /// must not happen; the caller reports the errno to the parent.
    #[cfg(target_os = "linux")]
    pub(crate) fn apply_in_child(&self) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;

        // No CAP_SYS_PTRACE for the command, even as root: the capability
        // would override the runtime's non-dumpable flag and open its
        // `/proc/<pid>/environ` and `mem` (its keys). Dropped from the
        // bounding and ambient sets, it is gone after `exec`. Errors mean
        // there was nothing to drop (no CAP_SETPCAP: not root) and are
        // ignored.
        // SAFETY: prctl with integer arguments only; no memory is shared.
        unsafe {
            libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0);
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_LOWER,
                CAP_SYS_PTRACE,
                0,
                0,
            );
        }
        // SAFETY: prctl with integer arguments only; no memory is shared.
        // no_new_privs is required for unprivileged Landlock and seccomp,
        // and stops setuid binaries (sudo) from shedding the sandbox.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: landlock_restrict_self(fd, flags) takes a ruleset fd that
        // `self` keeps open for as long as this borrow lives, and no pointers.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                self.ruleset.as_raw_fd(),
                0u32,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if let Some(filter) = &self.filter {
            filter.install()?;
        }
        Ok(())
    }

    /// Uninhabited off Linux.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn apply_in_child(&self) -> std::io::Result<()> {
        match *self {}
    }
}

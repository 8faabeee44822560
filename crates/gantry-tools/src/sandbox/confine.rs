//! Landlock and seccomp for a process started by `std`/`tokio` rather than
//! by the shell tool's clone: a language server, which runs the
//! workspace's code (build scripts, plugins) that the model may have
//! written, so it may touch no more than a sandboxed command may. The
//! rules are built before the fork and applied in a `pre_exec` hook; put
//! after [`isolate`](super::isolate)'s, they confine PID 1 of the new
//! namespaces once its `/proc` is mounted (Landlock forbids mounts).
//!
//! Such a process gets no private `/tmp` mounted over the shared one (that
//! is the clone path's namespace plan): with a `private_tmp`, the shared
//! temp dirs are simply not writable, and the private one is, as its
//! `TMPDIR`.

use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{SandboxError, SandboxPolicy, prepare};

/// Makes `cmd` start confined by `policy` with `workspace` as its
/// workspace; nothing under `danger-full-access`. Refused where the
/// machine cannot enforce the mode, as a command would be.
pub fn confine(
    cmd: &mut std::process::Command,
    policy: &SandboxPolicy,
    workspace: &Path,
) -> Result<(), SandboxError> {
    let mut policy = policy.clone();
    if let Some(private) = policy.private_tmp.take()
        && policy.is_sandboxed()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&private)
            .map_err(|e| SandboxError::Setup(format!("cannot make {}: {e}", private.display())))?;
        let shared: Vec<PathBuf> = [PathBuf::from("/tmp"), std::env::temp_dir()]
            .iter()
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect();
        policy.writable_roots.retain(|root| {
            std::fs::canonicalize(root).map_or(true, |root| !shared.contains(&root))
        });
        policy.writable_roots.push(private.clone());
        cmd.env("TMPDIR", &private);
    }
    let Some(prepared) = prepare(&policy, workspace)? else {
        return Ok(());
    };
    let prepared = Arc::new(prepared);
    // SAFETY: the hook runs in the forked child before exec; apply_in_child
    // makes raw system calls on memory built above and allocates nothing.
    unsafe {
        cmd.pre_exec(move || prepared.apply_in_child());
    }
    Ok(())
}

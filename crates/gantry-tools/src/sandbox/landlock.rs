//! The Landlock ruleset for the filesystem side of the sandbox.
//!
//! Landlock is allow-listing: once a ruleset handles an access right, that
//! right is denied everywhere except beneath the paths a rule grants it on.
//! The ruleset is created (and its path rules opened) in the parent; only
//! `landlock_restrict_self` runs in the child.

use std::collections::HashSet;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use ::landlock::{
    ABI, Access, AccessFs, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope,
};

use super::SandboxError;

/// The ABI whose access rights the ruleset asks for. Pinned rather than
/// "newest", as the landlock crate recommends: a newer ABI would start
/// denying rights the rules below never grant (ABI 9 restricts connecting to
/// named UNIX sockets, which local tooling needs). Kernels older than this
/// but at least `SandboxSupport::MIN_LANDLOCK_ABI` get the subset they know
/// (missing: device ioctls, ABI 5).
const TARGET_ABI: ABI = ABI::V5;

/// Device files every sandboxed command may read and write.
const DEVICE_FILES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// Builds a ruleset allowing reads everywhere but `denied` and writes only
/// beneath `writable`. All paths are canonical. Returns the ruleset's fd,
/// for `landlock_restrict_self` in the child.
pub(super) fn build_ruleset(
    mode: &'static str,
    writable: &[PathBuf],
    denied: &[PathBuf],
) -> Result<OwnedFd, SandboxError> {
    let err = |e: ::landlock::RulesetError| SandboxError::Setup(format!("landlock: {e}"));
    let all = AccessFs::from_all(TARGET_ABI);
    let read = AccessFs::from_read(TARGET_ABI);
    let device = make_device_access();

    // Best effort (the crate's default) only trims rights the running kernel
    // does not know; `SandboxSupport::check` has already made sure it knows
    // at least ABI 3, which covers every read and write path operation
    // including truncation. Dropped handled rights beyond that (ioctl on
    // devices, signal scoping) are hardening, not the contract.
    let mut ruleset: RulesetCreated = Ruleset::default()
        .handle_access(all)
        .map_err(err)?
        // Signals to processes outside the sandbox (the runtime itself,
        // anything else running as the same user) are denied on ABI 6+.
        .scope(Scope::Signal)
        .map_err(err)?
        .create()
        .map_err(err)?;

    for grant in read_grants(denied) {
        let access = match grant {
            ReadGrant::Tree(_) => read,
            ReadGrant::ListOnly(_) => BitFlags::from(AccessFs::ReadDir),
        };
        ruleset = add(ruleset, grant.path(), access)?;
    }
    for path in writable {
        ruleset = add(ruleset, path, all)?;
    }
    for dev in DEVICE_FILES {
        ruleset = add(ruleset, Path::new(dev), device)?;
    }

    // `None` when the kernel turned out to enforce nothing; never pretend.
    Option::<OwnedFd>::from(ruleset).ok_or_else(|| SandboxError::Unavailable {
        mode,
        reason: "the kernel does not enforce Landlock".into(),
    })
}

/// Read and write on a device file, without execute.
fn make_device_access() -> BitFlags<AccessFs> {
    AccessFs::from_file(TARGET_ABI) & !BitFlags::from(AccessFs::Execute)
}

/// Adds a rule granting `access` beneath `path`. A path that cannot be
/// opened (gone since it was listed, `/dev/tty` in a container without one)
/// is skipped: a missing grant only takes rights away.
fn add(
    ruleset: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, SandboxError> {
    let Ok(fd) = PathFd::new(path) else {
        return Ok(ruleset);
    };
    // Best effort trims directory-only rights (ReadDir, MakeDir...) off a
    // rule on a plain file instead of failing.
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| SandboxError::Setup(format!("landlock rule for {}: {e}", path.display())))
}

/// A read grant computed by [`read_grants`].
#[derive(Debug, PartialEq, Eq)]
enum ReadGrant {
    /// Read and execute everything beneath.
    Tree(PathBuf),
    /// Only list directories beneath: an ancestor of a denied path. Listing
    /// is inherited by the denied path too (its names can be listed, its
    /// contents not read); without it `ls /` would fail whenever anything
    /// is denied.
    ListOnly(PathBuf),
}

impl ReadGrant {
    fn path(&self) -> &Path {
        match self {
            ReadGrant::Tree(p) | ReadGrant::ListOnly(p) => p,
        }
    }
}

/// The grants that make everything readable except `denied`: `/` itself
/// when nothing is denied; otherwise, along the way down to each denied
/// path, full read on the siblings and listing only on the ancestors.
fn read_grants(denied: &[PathBuf]) -> Vec<ReadGrant> {
    let mut out = Vec::new();
    let mut visited = HashSet::new();
    grant_read_except(Path::new("/"), denied, &mut visited, &mut out);
    out
}

fn grant_read_except(
    path: &Path,
    denied: &[PathBuf],
    visited: &mut HashSet<PathBuf>,
    out: &mut Vec<ReadGrant>,
) {
    if denied.iter().any(|d| path.starts_with(d)) || !visited.insert(path.to_path_buf()) {
        return;
    }
    if !denied.iter().any(|d| d.starts_with(path)) {
        out.push(ReadGrant::Tree(path.to_path_buf()));
        return;
    }
    // A denied path lies strictly below `path`, so full read on `path`
    // would grant it: list `path` only, and grant each entry instead.
    out.push(ReadGrant::ListOnly(path.to_path_buf()));
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        // Follow symlinks to where they point, so a link next to a denied
        // directory cannot lead back into it; dangling links lead nowhere.
        if let Ok(target) = std::fs::canonicalize(entry.path()) {
            grant_read_except(&target, denied, visited, out);
        }
    }
}

/// The Landlock ABI the running kernel reports (0 when Landlock is missing
/// or disabled).
pub(super) fn kernel_abi() -> i64 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    // only returns the ABI version (or -1 with errno); it reads no memory
    // and creates no fd.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    v.max(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_denied_grants_root() {
        assert_eq!(read_grants(&[]), vec![ReadGrant::Tree(PathBuf::from("/"))]);
    }

    #[test]
    fn denied_dir_grants_its_siblings_and_lists_its_ancestors() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("a/secret")).unwrap();
        std::fs::write(root.join("a/ok.txt"), "").unwrap();
        std::fs::create_dir(root.join("b")).unwrap();
        std::os::unix::fs::symlink(root.join("a/secret"), root.join("a/link")).unwrap();
        let grants = read_grants(&[root.join("a/secret")]);
        assert!(grants.contains(&ReadGrant::Tree(root.join("a/ok.txt"))));
        // A rule on `b` is fine even if it held a link into the denied dir:
        // Landlock judges the resolved path, not the link's.
        assert!(grants.contains(&ReadGrant::Tree(root.join("b"))));
        for ancestor in [Path::new("/"), &root, &root.join("a")] {
            assert!(grants.contains(&ReadGrant::ListOnly(ancestor.to_path_buf())));
            assert!(!grants.contains(&ReadGrant::Tree(ancestor.to_path_buf())));
        }
        // The link in the expanded dir is followed, and leads nowhere.
        assert!(
            !grants
                .iter()
                .any(|g| g.path().starts_with(root.join("a/secret")))
        );
        assert!(!grants.iter().any(|g| g.path() == root.join("a/link")));
    }
}

//! How Pando's clients find an instance: the ports derived from the
//! workspace path, the lock file `<workdir>/.pando/ipc.lock` (held with an
//! exclusive `flock` while serving) and the machine-wide registry entry
//! `/tmp/pando-instances/<instance_id>.json`. Both files go when the
//! instance stops ([`Registration`] removes them when dropped); entries a
//! dead process left are replaced. Neither place is ours alone (the
//! model's commands write in the workspace, any user in `/tmp`), so every
//! file is reached beneath a directory handle without following links
//! (`nofollow`).

use std::ffi::{OsStr, OsString};
use std::fs::{DirBuilder, File};
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};

use crate::nofollow::{self, os};

/// Where Pando instances register, machine-wide.
pub const DEFAULT_REGISTRY_DIR: &str = "/tmp/pando-instances";

/// The mode Gantry registers with: no terminal, no window.
pub const MODE: &str = "noninteractive";

/// The ports Pando derives from a workspace's absolute path: base = 40000
/// + fnv32a(path) % 20000; PUB = base, RPC = base + 1.
pub fn derived_ports(path: &str) -> (u16, u16) {
    // Below 60000: both fit a u16.
    let base = 40_000 + (fnv32a(path) % 20_000) as u16;
    (base, base + 1)
}

/// FNV-1a (32 bits) of `text`, as Go's `hash/fnv` computes it.
pub(crate) fn fnv32a(text: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in text.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// `dir` made absolute the way Go's `filepath.Abs` does: joined to the
/// current directory and cleaned lexically (`.` and `..` resolved without
/// looking at the disk, symlinks kept).
pub fn absolute(dir: &Path) -> std::io::Result<PathBuf> {
    let joined = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()?.join(dir)
    };
    let mut clean = PathBuf::from("/");
    for part in joined.components() {
        match part {
            Component::Normal(name) => clean.push(name),
            Component::ParentDir => {
                clean.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Ok(clean)
}

/// What the lock file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockInfo {
    /// The instance's UUID.
    pub instance_id: String,
    /// The serving process.
    pub pid: i64,
    /// Where its PUB socket listens.
    pub pub_port: u16,
    /// Where its ROUTER socket listens.
    pub rpc_port: u16,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
}

/// What the registry entry holds: the lock file's fields and more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistryEntry {
    /// The lock file's fields.
    #[serde(flatten)]
    pub lock: LockInfo,
    /// The workspace, exactly as served (no symlink resolved).
    pub path: String,
    /// How the instance runs (`noninteractive` for Gantry).
    pub mode: String,
    /// Whether it owns the workspace's sockets (always, for Gantry).
    pub is_primary: bool,
}

/// Why an instance could not take a workspace.
#[derive(Debug)]
pub enum DiscoveryError {
    /// Another live instance holds the workspace's lock.
    AlreadyServed {
        /// The workspace.
        dir: PathBuf,
        /// What its lock file says, when readable.
        holder: Option<LockInfo>,
    },
    /// A file or directory discovery keeps is not what it must be (a
    /// symlink, a hard link, another user's, ...): refused, not touched.
    Refused {
        /// The file or directory.
        path: PathBuf,
        /// What it is and why that is refused.
        why: String,
    },
    /// A file or directory could not be made or written.
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

impl std::fmt::Display for DiscoveryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiscoveryError::AlreadyServed { dir, holder } => {
                write!(f, "{} is already served by a Pando instance", dir.display())?;
                if let Some(h) = holder {
                    write!(
                        f,
                        " ({}, pid {}, rpc port {}, pub port {})",
                        h.instance_id, h.pid, h.rpc_port, h.pub_port
                    )?;
                }
                write!(f, ": it holds {}", lock_path(dir).display())
            }
            DiscoveryError::Refused { path, why } => {
                write!(f, "refusing {}: {why}", path.display())
            }
            DiscoveryError::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for DiscoveryError {}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> DiscoveryError {
    let what = what.into();
    move |source| DiscoveryError::Io { what, source }
}

/// `<dir>/.pando/ipc.lock`.
pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join(".pando").join("ipc.lock")
}

/// Whether process `pid` is alive (one we may not signal counts).
pub fn pid_alive(pid: i64) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// The lock file's name in `<workdir>/.pando`.
const LOCK_NAME: &str = "ipc.lock";

/// A workspace's lock, held: its file stays open with the `flock` on.
pub struct WorkspaceLock {
    file: File,
    /// `<dir>/.pando`, held open: the lock file is removed through it, so
    /// a link put in its place meanwhile is never followed.
    pando: OwnedFd,
    path: PathBuf,
}

impl WorkspaceLock {
    /// Takes `dir`'s lock, or says who holds it. `.pando` and the lock
    /// file must be a real directory and a regular file this process's
    /// user owns (a symlink, a hard link or anything else is refused,
    /// never followed): the model's commands can write in the workspace.
    pub fn acquire(dir: &Path) -> Result<Self, DiscoveryError> {
        // The workspace itself is the user's choice, followed if a link;
        // what is inside it is not.
        let ws = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(os(format!("cannot open {}", dir.display())))?;
        let pando_path = dir.join(".pando");
        let (pando, st) = nofollow::open_dir(ws.as_fd(), OsStr::new(".pando"), 0o700, &pando_path)?;
        nofollow::check_owner(&st, &pando_path)?;
        rustix::fs::fchmod(&pando, Mode::from_raw_mode(0o700)).map_err(os(format!(
            "cannot set the mode of {}",
            pando_path.display()
        )))?;
        let path = lock_path(dir);
        let mut file = nofollow::open_own_file(pando.as_fd(), OsStr::new(LOCK_NAME), 0o600, &path)?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let holder = nofollow::read_bounded(&mut file)
                    .and_then(|text| serde_json::from_str(&text).ok());
                return Err(DiscoveryError::AlreadyServed {
                    dir: dir.to_path_buf(),
                    holder,
                });
            }
            Err(e) => {
                return Err(DiscoveryError::Io {
                    what: format!("cannot lock {}", path.display()),
                    source: e.into(),
                });
            }
        }
        rustix::fs::fchmod(&file, Mode::from_raw_mode(0o600))
            .map_err(os(format!("cannot set the mode of {}", path.display())))?;
        Ok(Self { file, pando, path })
    }

    /// Writes `info` (pretty JSON, trailing newline), replacing what a
    /// dead instance left.
    pub fn write(&mut self, info: &LockInfo) -> Result<(), DiscoveryError> {
        let what = format!("cannot write {}", self.path.display());
        let mut text = serde_json::to_string_pretty(info).unwrap_or_default();
        text.push('\n');
        self.file.set_len(0).map_err(io(what.clone()))?;
        self.file
            .seek(SeekFrom::Start(0))
            .map_err(io(what.clone()))?;
        self.file.write_all(text.as_bytes()).map_err(io(what))
    }
}

/// An instance's lock file and registry entry, removed when dropped.
pub struct Registration {
    lock: WorkspaceLock,
    /// The registry directory, held open: the entry is removed through it.
    registry: OwnedFd,
    name: OsString,
    entry: PathBuf,
}

impl Registration {
    /// Writes the lock file and the registry entry in `registry_dir`,
    /// after removing entries for the same path whose process is dead.
    /// The registry must be a real directory (not a symlink) owned by this
    /// process's user or root, and sticky if others may write in it; its
    /// entries are read without following links or waiting on a FIFO, and
    /// ours is written by temp file and rename, so a link planted under
    /// its name is replaced, never followed.
    pub fn publish(
        mut lock: WorkspaceLock,
        entry: &RegistryEntry,
        registry_dir: &Path,
    ) -> Result<Self, DiscoveryError> {
        lock.write(&entry.lock)?;
        let registry = open_registry(registry_dir)?;
        remove_stale(registry.as_fd(), &entry.path);
        let name = OsString::from(format!("{}.json", entry.lock.instance_id));
        let path = registry_dir.join(&name);
        let mut text = serde_json::to_string_pretty(entry).unwrap_or_default();
        text.push('\n');
        nofollow::replace_file(registry.as_fd(), &name, text.as_bytes(), 0o644)
            .map_err(io(format!("cannot write {}", path.display())))?;
        Ok(Self {
            lock,
            registry,
            name,
            entry: path,
        })
    }

    /// The registry entry's file.
    pub fn entry_path(&self) -> &Path {
        &self.entry
    }

    /// The lock file.
    pub fn lock_path(&self) -> &Path {
        &self.lock.path
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // Removed while the lock is still held: the next instance finds no
        // file, or one it creates and locks itself. Through the directories
        // opened at start: a link swapped in for either since leads nowhere.
        nofollow::unlink(&self.registry, &self.name);
        nofollow::unlink(&self.lock.pando, OsStr::new(LOCK_NAME));
    }
}

/// Opens the registry directory `registry_dir`, created (mode 0755, as
/// Pando makes it) when missing. Refused: a symlink or anything but a
/// directory; one owned by another user than ours or root (that user
/// could remove or replace our entry and point Pando's clients at other
/// ports); one others may write in that is not sticky (the same, for them).
fn open_registry(registry_dir: &Path) -> Result<OwnedFd, DiscoveryError> {
    let dir = absolute(registry_dir).map_err(io(format!(
        "cannot make {} absolute",
        registry_dir.display()
    )))?;
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(nofollow::refused(
            &dir,
            "it is not a directory Gantry can register in",
        ));
    };
    // Its ancestors (`/tmp`) are the machine's, trusted and followed.
    DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(parent)
        .map_err(io(format!("cannot create {}", parent.display())))?;
    let parent_fd = rustix::fs::open(
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(os(format!("cannot open {}", parent.display())))?;
    let (fd, st) = nofollow::open_dir(parent_fd.as_fd(), name, 0o755, &dir)?;
    if st.st_uid != nofollow::euid() && st.st_uid != 0 {
        return Err(nofollow::refused(
            &dir,
            format!(
                "it is owned by uid {}, neither this process's user (uid {}) nor root: that user \
                 could remove or replace this instance's entry (remove the directory, or point \
                 the registry elsewhere)",
                st.st_uid,
                nofollow::euid()
            ),
        ));
    }
    let mode = st.st_mode & 0o7777;
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(nofollow::refused(
            &dir,
            format!(
                "others may write in it (mode {mode:o}) and it is not sticky: they could remove \
                 or replace this instance's entry (make it 0755, or 1777 to share it)"
            ),
        ));
    }
    Ok(fd)
}

/// Removes the entries for `path` in `registry` a dead process left. Any
/// user may put files there: only regular files are read (a link, FIFO or
/// device is skipped, never waited on), at most [`nofollow::READ_LIMIT`]
/// bytes of each, and only our own user's entries are removed.
fn remove_stale(registry: BorrowedFd<'_>, path: &str) {
    let Ok(entries) = rustix::fs::Dir::read_from(registry) else {
        return;
    };
    for file in entries.flatten() {
        let name = OsStr::from_bytes(file.file_name().to_bytes());
        if Path::new(name).extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Some((mut file, st)) = nofollow::open_regular(registry, name) else {
            continue;
        };
        let Some(text) = nofollow::read_bounded(&mut file) else {
            continue;
        };
        let Ok(entry) = serde_json::from_str::<RegistryEntry>(&text) else {
            continue;
        };
        if entry.path == path
            && !pid_alive(entry.lock.pid)
            && st.st_uid == nofollow::euid()
            // The name may have been given to another file since it was read.
            && nofollow::same_file(registry, name, &st)
        {
            nofollow::unlink(registry, name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::Permissions;
    use std::os::unix::fs::PermissionsExt;

    use rustix::fs::Mode;

    fn info(id: &str, pid: i64) -> LockInfo {
        LockInfo {
            instance_id: id.to_owned(),
            pid,
            pub_port: 41_000,
            rpc_port: 41_001,
            started_at: "2026-01-01T00:00:00Z".to_owned(),
        }
    }

    #[test]
    fn ports_follow_fnv32a_of_the_path() {
        // fnv32a("") is the offset basis: 2166136261 % 20000 = 16261.
        assert_eq!(derived_ports(""), (56_261, 56_262));
        let (pub_port, rpc) = derived_ports("/home/me/project");
        assert_eq!(rpc, pub_port + 1);
        assert!((40_000..60_000).contains(&pub_port));
    }

    #[test]
    fn absolute_cleans_lexically_and_keeps_symlinks() {
        let p = absolute(Path::new("/a/./b/../c/")).unwrap();
        assert_eq!(p, PathBuf::from("/a/c"));
        assert!(absolute(Path::new("rel")).unwrap().is_absolute());
    }

    #[test]
    fn a_second_lock_on_a_dir_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = WorkspaceLock::acquire(dir.path()).unwrap();
        first
            .write(&info("one", i64::from(std::process::id())))
            .unwrap();
        let text = std::fs::read_to_string(lock_path(dir.path())).unwrap();
        assert!(text.ends_with("}\n") && text.contains("\n  \"pid\""));
        match WorkspaceLock::acquire(dir.path()) {
            Err(DiscoveryError::AlreadyServed { holder, .. }) => {
                assert_eq!(holder.unwrap().instance_id, "one");
            }
            _ => panic!("the second lock was not refused"),
        }
        drop(first);
        WorkspaceLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn registration_writes_both_files_with_their_modes_and_removes_them() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let registry = tempfile::tempdir().unwrap();
        let path = dir.path().to_string_lossy().into_owned();
        // A dead instance's entry for the same path, and a live one's for another.
        let stale = RegistryEntry {
            lock: info("stale", i64::from(i32::MAX)),
            path: path.clone(),
            mode: MODE.to_owned(),
            is_primary: true,
        };
        let other = RegistryEntry {
            path: "/elsewhere".to_owned(),
            lock: info("other", i64::from(i32::MAX)),
            ..stale.clone()
        };
        for e in [&stale, &other] {
            let file = registry.path().join(format!("{}.json", e.lock.instance_id));
            std::fs::write(file, serde_json::to_string(e).unwrap()).unwrap();
        }
        let entry = RegistryEntry {
            lock: info("mine", i64::from(std::process::id())),
            path,
            mode: MODE.to_owned(),
            is_primary: true,
        };
        let lock = WorkspaceLock::acquire(dir.path()).unwrap();
        let reg = Registration::publish(lock, &entry, registry.path()).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(reg.entry_path()), 0o644);
        assert_eq!(mode(reg.lock_path()), 0o600);
        assert_eq!(mode(&dir.path().join(".pando")), 0o700);
        let read: RegistryEntry =
            serde_json::from_str(&std::fs::read_to_string(reg.entry_path()).unwrap()).unwrap();
        assert_eq!(read, entry);
        assert!(!registry.path().join("stale.json").exists());
        assert!(registry.path().join("other.json").exists());
        let (entry_path, lock_file) = (reg.entry_path().to_owned(), reg.lock_path().to_owned());
        drop(reg);
        assert!(!entry_path.exists() && !lock_file.exists());
    }

    #[test]
    fn publish_replaces_links_planted_under_the_entrys_names_without_following_them() {
        use std::os::unix::fs::{MetadataExt, symlink};
        let tmp = tempfile::tempdir().unwrap();
        let (ws, registry, outside) = (
            tmp.path().join("ws"),
            tmp.path().join("registry"),
            tmp.path().join("outside"),
        );
        for d in [&ws, &registry, &outside] {
            std::fs::create_dir(d).unwrap();
        }
        let entry = RegistryEntry {
            lock: info("planted", i64::from(std::process::id())),
            path: ws.to_string_lossy().into_owned(),
            mode: MODE.to_owned(),
            is_primary: true,
        };
        // Links named like the entry and like the temp file it was once
        // written through, to files outside.
        let names = ["planted.json", ".planted.json.tmp"];
        for name in names {
            let target = outside.join(name);
            std::fs::write(&target, "outside\n").unwrap();
            std::fs::set_permissions(&target, Permissions::from_mode(0o600)).unwrap();
            symlink(&target, registry.join(name)).unwrap();
        }
        let lock = WorkspaceLock::acquire(&ws).unwrap();
        let reg = Registration::publish(lock, &entry, &registry).unwrap();
        for name in names {
            let target = outside.join(name);
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "outside\n");
            assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o777, 0o600);
        }
        let meta = std::fs::symlink_metadata(reg.entry_path()).unwrap();
        assert!(meta.is_file() && meta.mode() & 0o777 == 0o644);
        let read: RegistryEntry =
            serde_json::from_str(&std::fs::read_to_string(reg.entry_path()).unwrap()).unwrap();
        assert_eq!(read, entry);
        drop(reg);
        assert!(outside.join("planted.json").exists());
    }

    #[test]
    fn a_registry_others_could_rewrite_is_refused() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let entry = RegistryEntry {
            lock: info("mine", i64::from(std::process::id())),
            path: ws.to_string_lossy().into_owned(),
            mode: MODE.to_owned(),
            is_primary: true,
        };
        let publish = |registry: &Path| {
            let lock = WorkspaceLock::acquire(&ws).unwrap();
            Registration::publish(lock, &entry, registry).map(drop)
        };
        let registry = tmp.path().join("registry");
        std::fs::create_dir(&registry).unwrap();
        // Writable by all and not sticky: refused, nothing written.
        std::fs::set_permissions(&registry, Permissions::from_mode(0o777)).unwrap();
        let said = publish(&registry).unwrap_err().to_string();
        assert!(
            said.contains("not sticky") && said.contains("777"),
            "{said}"
        );
        assert_eq!(std::fs::read_dir(&registry).unwrap().count(), 0);
        // Sticky, as /tmp is: accepted.
        std::fs::set_permissions(&registry, Permissions::from_mode(0o1777)).unwrap();
        publish(&registry).unwrap();
        // Another user's (settable only as root): refused.
        let theirs = tmp.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        let other = rustix::process::Uid::from_raw(4242);
        if rustix::fs::chown(&theirs, Some(other), None).is_ok() {
            assert_eq!(std::fs::metadata(&theirs).unwrap().uid(), 4242);
            let said = publish(&theirs).unwrap_err().to_string();
            assert!(said.contains("owned by uid 4242"), "{said}");
            assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
        }
    }

    #[test]
    fn acquire_refuses_what_is_not_a_plain_file_or_dir_and_changes_nothing() {
        use std::os::unix::fs::MetadataExt;
        let refused = |ws: &Path, what: &str| match WorkspaceLock::acquire(ws) {
            // DiscoveryError::Refused, said so (matched by its text so
            // that this test also runs against code without the variant).
            Err(e) if e.to_string().starts_with("refusing ") => {
                let said = e.to_string();
                assert!(said.contains(what), "{said}");
            }
            Err(e) => panic!("not refused as {what}: {e}"),
            Ok(_) => panic!("accepted, not refused as {what}"),
        };
        // `.pando` a regular file.
        let a = tempfile::tempdir().unwrap();
        std::fs::write(a.path().join(".pando"), "x").unwrap();
        refused(a.path(), "a regular file, not a directory");
        // The lock file a FIFO (refused at once, not waited on) or a directory.
        let b = tempfile::tempdir().unwrap();
        std::fs::create_dir(b.path().join(".pando")).unwrap();
        let lock = lock_path(b.path());
        rustix::fs::mkfifoat(rustix::fs::CWD, &lock, Mode::from_raw_mode(0o644)).unwrap();
        refused(b.path(), "a FIFO, not a regular file");
        assert_eq!(std::fs::metadata(&lock).unwrap().mode() & 0o777, 0o644);
        std::fs::remove_file(&lock).unwrap();
        std::fs::create_dir(&lock).unwrap();
        refused(b.path(), "a directory, not a regular file");
    }
}

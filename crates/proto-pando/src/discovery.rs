//! How Pando's clients find an instance: the ports derived from the
//! workspace path, the lock file `<workdir>/.pando/ipc.lock` (held with an
//! exclusive `flock` while serving) and the machine-wide registry entry
//! `/tmp/pando-instances/<instance_id>.json`. Both files go when the
//! instance stops ([`Registration`] removes them when dropped); entries a
//! dead process left are replaced.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where Pando instances register, machine-wide.
pub const DEFAULT_REGISTRY_DIR: &str = "/tmp/pando-instances";

/// The mode Gantry registers with: no terminal, no window.
pub const MODE: &str = "noninteractive";

/// The ports Pando derives from a workspace's absolute path: base = 40000
/// + fnv32a(path) % 20000; PUB = base, RPC = base + 1.
pub fn derived_ports(path: &str) -> (u16, u16) {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in path.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    // Below 60000: both fit a u16.
    let base = 40_000 + (hash % 20_000) as u16;
    (base, base + 1)
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

/// A workspace's lock, held: its file stays open with the `flock` on.
pub struct WorkspaceLock {
    file: File,
    path: PathBuf,
}

impl WorkspaceLock {
    /// Takes `dir`'s lock, or says who holds it.
    pub fn acquire(dir: &Path) -> Result<Self, DiscoveryError> {
        let pando = dir.join(".pando");
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&pando)
            .map_err(io(format!("cannot create {}", pando.display())))?;
        std::fs::set_permissions(&pando, Permissions::from_mode(0o700))
            .map_err(io(format!("cannot set the mode of {}", pando.display())))?;
        let path = lock_path(dir);
        // Not truncated on open: a live holder's content stays readable.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(io(format!("cannot open {}", path.display())))?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let mut text = String::new();
                let holder = file
                    .read_to_string(&mut text)
                    .ok()
                    .and_then(|_| serde_json::from_str(&text).ok());
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
        std::fs::set_permissions(&path, Permissions::from_mode(0o600))
            .map_err(io(format!("cannot set the mode of {}", path.display())))?;
        Ok(Self { file, path })
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
    entry: PathBuf,
}

impl Registration {
    /// Writes the lock file and the registry entry in `registry_dir`,
    /// after removing entries for the same path whose process is dead.
    pub fn publish(
        mut lock: WorkspaceLock,
        entry: &RegistryEntry,
        registry_dir: &Path,
    ) -> Result<Self, DiscoveryError> {
        lock.write(&entry.lock)?;
        DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(registry_dir)
            .map_err(io(format!("cannot create {}", registry_dir.display())))?;
        remove_stale(registry_dir, &entry.path);
        let path = registry_dir.join(format!("{}.json", entry.lock.instance_id));
        let tmp = registry_dir.join(format!(".{}.json.tmp", entry.lock.instance_id));
        let what = format!("cannot write {}", path.display());
        let mut text = serde_json::to_string_pretty(entry).unwrap_or_default();
        text.push('\n');
        std::fs::write(&tmp, text).map_err(io(what.clone()))?;
        std::fs::set_permissions(&tmp, Permissions::from_mode(0o644)).map_err(io(what.clone()))?;
        std::fs::rename(&tmp, &path).map_err(io(what))?;
        Ok(Self { lock, entry: path })
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
        // file, or one it creates and locks itself.
        let _ = std::fs::remove_file(&self.entry);
        let _ = std::fs::remove_file(&self.lock.path);
    }
}

/// Removes the entries for `path` in `registry_dir` a dead process left.
fn remove_stale(registry_dir: &Path, path: &str) {
    let Ok(entries) = std::fs::read_dir(registry_dir) else {
        return;
    };
    for file in entries.flatten() {
        let name = file.path();
        if name.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&name) else {
            continue;
        };
        let Ok(entry) = serde_json::from_str::<RegistryEntry>(&text) else {
            continue;
        };
        if entry.path == path && !pid_alive(entry.lock.pid) {
            let _ = std::fs::remove_file(&name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! File I/O that cannot leave the workspace: every open is relative to a
//! handle (fd) on the workspace directory, with a resolution confined to it.
//!
//! * On Linux with `openat2(2)` (5.6+), the kernel resolves the whole path
//!   with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`: `..`, absolute symlinks
//!   and symlinks that lead out are refused atomically (`EXDEV`). Symlinks
//!   that stay inside are followed: real repositories have them
//!   (`RESOLVE_NO_SYMLINKS` would break them), and one swapped in by a
//!   race can only redirect to another workspace file the agent may write
//!   anyway.
//! * Elsewhere, or where `openat2` is missing (`ENOSYS`, or a seccomp
//!   profile that refuses it), the path is walked one component at a time
//!   with `O_NOFOLLOW`, and a symlink component is refused. The paths handed
//!   here were resolved by [`super::resolve`] (or come from a walk that does
//!   not follow links), so they contain no symlink unless one was swapped
//!   in after the check; refusing it is simple and safe.
//!
//! Writes go to a temporary file created inside the target's directory (via
//! that directory's fd) and `renameat` over the name: a reader never sees a
//! half-written file, and the final name is replaced, never followed. This
//! also means a hard link is split rather than written through.

use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::{WorkspacePath, display_rel};

/// How directories are opened: for use as the base of further `*at` calls.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);
/// How files are opened for reading. `NONBLOCK` so a FIFO swapped in cannot
/// hang the call (it changes nothing for regular files); `NOCTTY` so a
/// terminal never becomes our controlling one.
const READ_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOCTTY)
    .union(OFlags::NONBLOCK);

/// An open handle on the workspace directory. Every path opened through it
/// is resolved relative to this handle and can never leave it.
#[derive(Debug)]
pub struct WorkspaceDir {
    fd: OwnedFd,
    root: PathBuf,
}

/// Why an open was refused: it would have left the workspace.
#[derive(Debug)]
struct Escaped {
    /// The path relative to the workspace.
    rel: String,
    /// The kernel saw the resolution leave (`openat2`); otherwise a symlink
    /// component was found where the check saw none (the fallback walk).
    left: bool,
}

impl fmt::Display for Escaped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rel = &self.rel;
        if self.left {
            write!(
                f,
                "path {rel:?} leads outside the workspace (a symlink changed after the path was \
                 checked); only paths inside the workspace are allowed"
            )
        } else {
            write!(
                f,
                "path {rel:?} goes through a symlink that appeared after the path was checked; \
                 refusing to follow it, since it could lead outside the workspace"
            )
        }
    }
}

impl std::error::Error for Escaped {}

/// Whether `e` is a refusal to leave the workspace (from [`WorkspaceDir`] or
/// [`WorkspacePath`]'s I/O methods), as opposed to an ordinary I/O error.
pub fn is_escape(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Escaped>())
}

/// An internal open failure, before it is given the path for its message.
#[derive(Debug)]
enum Fail {
    /// `openat2` said the resolution would leave the base directory.
    Left,
    /// The walk met a symlink component.
    Symlink,
    /// Any other error.
    Os(Errno),
}

impl From<Errno> for Fail {
    fn from(e: Errno) -> Self {
        Fail::Os(e)
    }
}

impl Fail {
    fn into_io(self, rel: &Path) -> io::Error {
        let escaped = |left| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                Escaped {
                    rel: display_rel(rel),
                    left,
                },
            )
        };
        match self {
            Fail::Left => escaped(true),
            Fail::Symlink => escaped(false),
            Fail::Os(e) => e.into(),
        }
    }
}

impl WorkspaceDir {
    /// Opens the workspace directory `root`, which must be canonical (as
    /// [`WorkspacePath::root`] is): paths are made relative to it lexically.
    pub fn open(root: &Path) -> io::Result<Self> {
        let fd = rustix::fs::open(root, DIR_FLAGS, Mode::empty())?;
        Ok(Self {
            fd,
            root: root.to_path_buf(),
        })
    }

    /// `abs` relative to the root; a path not under it is refused.
    fn rel<'a>(&self, abs: &'a Path) -> io::Result<&'a Path> {
        abs.strip_prefix(&self.root)
            .map_err(|_| Fail::Left.into_io(abs))
    }

    /// Opens the file (or directory) at `abs`, a path inside the root,
    /// read-only. Symlinks are followed only while they stay inside.
    pub fn open_read(&self, abs: &Path) -> io::Result<File> {
        let rel = self.rel(abs)?;
        open_beneath(self.fd.as_fd(), rel, READ_FLAGS, Mode::empty())
            .map(File::from)
            .map_err(|f| f.into_io(rel))
    }

    /// Creates the missing directories above `abs`, like
    /// `std::fs::create_dir_all` of its parent, each one beneath the root.
    pub fn create_parents(&self, abs: &Path) -> io::Result<()> {
        let rel = self.rel(abs)?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        self.open_dir_creating(parent)
            .map(drop)
            .map_err(|f| f.into_io(parent))
    }

    /// Replaces the file at `abs` (a path inside the root whose directory
    /// exists) with `content`: written to a temporary file in that directory,
    /// then renamed over the name. The permission bits of a file replaced
    /// are kept; a new file gets `0o666` minus the umask.
    pub fn write_atomic(&self, abs: &Path, content: &[u8]) -> io::Result<()> {
        let rel = self.rel(abs)?;
        let Some(name) = rel.file_name() else {
            // The root itself (the checked path has no `..`): a directory.
            return Err(Errno::ISDIR.into());
        };
        let parent_rel = rel.parent().unwrap_or(Path::new(""));
        let parent = open_beneath(self.fd.as_fd(), parent_rel, DIR_FLAGS, Mode::empty())
            .map_err(|f| f.into_io(parent_rel))?;
        replace_in(parent.as_fd(), name, content)
    }

    /// The directory `rel`, created (with its missing ancestors) if needed.
    fn open_dir_creating(&self, rel: &Path) -> Result<OwnedFd, Fail> {
        match open_beneath(self.fd.as_fd(), rel, DIR_FLAGS, Mode::empty()) {
            Err(Fail::Os(Errno::NOENT)) => {}
            done => return done,
        }
        // One component at a time, each opened beneath the one before (so
        // beneath the root by induction), creating what is missing.
        let mut cur: Option<OwnedFd> = None;
        for comp in rel.components() {
            let name = match comp {
                Component::Normal(name) => name,
                Component::CurDir => continue,
                // A checked path has no `..` and is relative.
                _ => return Err(Fail::Left),
            };
            let at = cur.as_ref().map_or(self.fd.as_fd(), AsFd::as_fd);
            let next = match open_beneath(at, Path::new(name), DIR_FLAGS, Mode::empty()) {
                Err(Fail::Os(Errno::NOENT)) => {
                    // `mkdirat` never follows a symlink in the last component
                    // (an existing one, even dangling, gives EEXIST); another
                    // writer may also have made it meanwhile.
                    match rustix::fs::mkdirat(at, name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    open_beneath(at, Path::new(name), DIR_FLAGS, Mode::empty())?
                }
                other => other?,
            };
            cur = Some(next);
        }
        match cur {
            Some(fd) => Ok(fd),
            None => open_beneath(self.fd.as_fd(), Path::new(""), DIR_FLAGS, Mode::empty()),
        }
    }
}

impl WorkspacePath {
    /// Opens this path read-only beneath the workspace ([`WorkspaceDir::open_read`]).
    pub fn open_read(&self) -> io::Result<File> {
        WorkspaceDir::open(&self.root)?.open_read(&self.abs)
    }

    /// Creates the missing directories above this path, beneath the
    /// workspace ([`WorkspaceDir::create_parents`]).
    pub fn create_parents(&self) -> io::Result<()> {
        WorkspaceDir::open(&self.root)?.create_parents(&self.abs)
    }

    /// Replaces this file's content by temporary file and rename, beneath
    /// the workspace ([`WorkspaceDir::write_atomic`]).
    pub fn write_atomic(&self, content: &[u8]) -> io::Result<()> {
        WorkspaceDir::open(&self.root)?.write_atomic(&self.abs, content)
    }
}

/// Opens `rel` (relative, no `..`) beneath the directory `dir`.
fn open_beneath(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Fail> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if openat2_works() {
        match openat2_beneath(dir, rel, flags, mode) {
            // Probed as working, yet missing now: take the walk below.
            Err(Fail::Os(Errno::NOSYS)) => {}
            done => return done,
        }
    }
    open_walk(dir, rel, flags, mode)
}

/// Whether this kernel (and any seccomp filter around us) offers `openat2`,
/// probed once with a harmless open of `/`.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn openat2_works() -> bool {
    static WORKS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WORKS.get_or_init(|| {
        // ENOSYS before Linux 5.6; EPERM from container seccomp profiles
        // that predate the call. Either way the walk is the safe fallback.
        rustix::fs::openat2(
            rustix::fs::CWD,
            "/",
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            rustix::fs::ResolveFlags::empty(),
        )
        .is_ok()
    })
}

/// `openat2` with the kernel confining the resolution beneath `dir`.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn openat2_beneath(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Fail> {
    use rustix::fs::ResolveFlags;
    // BENEATH refuses `..` above `dir`, absolute symlinks and symlinks that
    // lead out, atomically; NO_MAGICLINKS refuses /proc's fd links. Plain
    // symlinks that stay inside are allowed (see the module doc).
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    let path = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    // EAGAIN: the kernel could not rule out a concurrent rename making a
    // `..` escape; it asks the caller to retry. Bounded, then reported.
    let mut last = Errno::AGAIN;
    for _ in 0..16 {
        match rustix::fs::openat2(dir, path, flags, mode, resolve) {
            Ok(fd) => return Ok(fd),
            Err(Errno::XDEV) => return Err(Fail::Left),
            Err(e @ Errno::AGAIN) => last = e,
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.into())
}

/// The portable fallback: one component at a time with `O_NOFOLLOW`; a
/// symlink anywhere is refused.
fn open_walk(dir: BorrowedFd<'_>, rel: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Fail> {
    let mut names: Vec<&OsStr> = Vec::new();
    for comp in rel.components() {
        match comp {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            // A checked path has no `..` and is relative.
            _ => return Err(Fail::Left),
        }
    }
    let Some((last, parents)) = names.split_last() else {
        return Ok(rustix::fs::openat(dir, ".", flags, mode)?);
    };
    let mut cur: Option<OwnedFd> = None;
    for name in parents {
        let at = cur.as_ref().map_or(dir, AsFd::as_fd);
        cur = Some(open_one(at, name, DIR_FLAGS, Mode::empty())?);
    }
    open_one(cur.as_ref().map_or(dir, AsFd::as_fd), last, flags, mode)
}

/// Opens the single entry `name` of `dir`, refusing it if it is a symlink.
fn open_one(dir: BorrowedFd<'_>, name: &OsStr, flags: OFlags, mode: Mode) -> Result<OwnedFd, Fail> {
    match rustix::fs::openat(dir, name, flags | OFlags::NOFOLLOW, mode) {
        Ok(fd) => Ok(fd),
        // O_NOFOLLOW reports a symlink as ELOOP (Linux, macOS), EMLINK
        // (FreeBSD) or, with O_DIRECTORY, ENOTDIR; tell it apart from a
        // real loop or a file used as a directory.
        Err(e @ (Errno::LOOP | Errno::MLINK | Errno::NOTDIR)) => {
            match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                    Err(Fail::Symlink)
                }
                _ => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Replaces the entry `name` of `parent` with a regular file holding
/// `content`, by temporary file and `renameat`.
fn replace_in(parent: BorrowedFd<'_>, name: &OsStr, content: &[u8]) -> io::Result<()> {
    // What is there now decides the mode and whether we may replace it. It
    // is opened for writing (no O_TRUNC: nothing changes) so that what
    // refused a plain write before (a read-only file, an immutable one)
    // still refuses it; O_NOFOLLOW because a symlink here is replaced, not
    // followed.
    let existing = rustix::fs::openat(
        parent,
        name,
        OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    );
    let keep_mode = match existing {
        Ok(fd) => {
            let st = rustix::fs::fstat(&fd)?;
            match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile => Some(Mode::from_raw_mode(st.st_mode & 0o7777)),
                FileType::Directory => return Err(Errno::ISDIR.into()),
                _ => None,
            }
        }
        Err(e @ (Errno::ACCESS | Errno::PERM | Errno::ROFS | Errno::TXTBSY | Errno::ISDIR)) => {
            return Err(e.into());
        }
        // Missing, a symlink (ELOOP), a FIFO without reader (ENXIO)...:
        // replaced by a new regular file.
        Err(_) => None,
    };
    let (tmp_name, fd) = create_temp(parent)?;
    let written = (|| -> io::Result<()> {
        let mut file = File::from(fd);
        file.write_all(content)?;
        if let Some(mode) = keep_mode {
            rustix::fs::fchmod(&file, mode)?;
        }
        // Not fsynced, like the plain write it replaces; the rename makes
        // the new content appear whole or not at all.
        rustix::fs::renameat(parent, tmp_name.as_str(), parent, name)?;
        Ok(())
    })();
    if written.is_err() {
        // Best effort: a leftover temp file is only clutter.
        let _ = rustix::fs::unlinkat(parent, tmp_name.as_str(), AtFlags::empty());
    }
    written
}

/// Creates a fresh temporary file in `parent`; `O_EXCL` so it is always a
/// new regular file, never an existing entry or a symlink's target.
fn create_temp(parent: BorrowedFd<'_>) -> io::Result<(String, OwnedFd)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    for _ in 0..64 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        // Short and fixed-size, so a long target name cannot push it past NAME_MAX.
        let name = format!(".gantry-write.{}.{n}.tmp", std::process::id());
        match rustix::fs::openat(parent, name.as_str(), flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => return Ok((name, fd)),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free name for a temporary file",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn dir_fd(p: &Path) -> OwnedFd {
        rustix::fs::open(p, DIR_FLAGS, Mode::empty()).expect("open dir")
    }

    #[test]
    fn walk_opens_plain_paths_and_refuses_symlinks() {
        let ws = tempfile::tempdir().expect("tempdir");
        let out = tempfile::tempdir().expect("tempdir");
        let w = ws.path();
        std::fs::create_dir(w.join("a")).expect("mkdir");
        std::fs::write(w.join("a/f.txt"), "hi").expect("write");
        std::fs::write(out.path().join("secret"), "s").expect("write");
        symlink(out.path(), w.join("out")).expect("symlink");
        symlink("a/f.txt", w.join("in")).expect("symlink");
        let root = dir_fd(w);
        let fd = open_walk(
            root.as_fd(),
            Path::new("a/f.txt"),
            READ_FLAGS,
            Mode::empty(),
        );
        let text = std::io::read_to_string(File::from(fd.expect("plain path")));
        assert_eq!(text.expect("read"), "hi");
        assert!(open_walk(root.as_fd(), Path::new(""), DIR_FLAGS, Mode::empty()).is_ok());
        for rel in ["out/secret", "in", "../x"] {
            let r = open_walk(root.as_fd(), Path::new(rel), READ_FLAGS, Mode::empty());
            assert!(matches!(r, Err(Fail::Symlink | Fail::Left)), "{rel}: {r:?}");
        }
        assert!(matches!(
            open_walk(
                root.as_fd(),
                Path::new("a/missing"),
                READ_FLAGS,
                Mode::empty()
            ),
            Err(Fail::Os(Errno::NOENT))
        ));
        assert!(matches!(
            open_walk(
                root.as_fd(),
                Path::new("a/f.txt/x"),
                READ_FLAGS,
                Mode::empty()
            ),
            Err(Fail::Os(Errno::NOTDIR))
        ));
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn openat2_follows_inside_links_and_refuses_escapes() {
        if !openat2_works() {
            return; // the walk above is what runs here
        }
        let ws = tempfile::tempdir().expect("tempdir");
        let out = tempfile::tempdir().expect("tempdir");
        let w = ws.path();
        std::fs::create_dir(w.join("a")).expect("mkdir");
        std::fs::write(w.join("a/f.txt"), "hi").expect("write");
        symlink(out.path(), w.join("out")).expect("symlink");
        symlink("a/f.txt", w.join("in")).expect("symlink");
        symlink("../../etc", w.join("a/up")).expect("symlink");
        let root = dir_fd(w);
        assert!(openat2_beneath(root.as_fd(), Path::new("in"), READ_FLAGS, Mode::empty()).is_ok());
        for rel in ["out", "a/up/passwd", "../x"] {
            let r = openat2_beneath(root.as_fd(), Path::new(rel), READ_FLAGS, Mode::empty());
            assert!(matches!(r, Err(Fail::Left)), "{rel}: {r:?}");
        }
    }

    #[test]
    fn write_atomic_keeps_mode_and_replaces_symlinks() {
        use std::os::unix::fs::PermissionsExt;
        let ws = tempfile::tempdir().expect("tempdir");
        let out = tempfile::tempdir().expect("tempdir");
        let w = std::fs::canonicalize(ws.path()).expect("canonical");
        let dir = WorkspaceDir::open(&w).expect("open ws");
        let script = w.join("run.sh");
        std::fs::write(&script, "old").expect("write");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        dir.write_atomic(&script, b"new").expect("write_atomic");
        assert_eq!(std::fs::read_to_string(&script).expect("read"), "new");
        let mode = std::fs::metadata(&script)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        // A symlink in the final place is replaced by the file, its target untouched.
        let target = out.path().join("t");
        std::fs::write(&target, "outside").expect("write");
        symlink(&target, w.join("l")).expect("symlink");
        dir.write_atomic(&w.join("l"), b"in").expect("write_atomic");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "outside");
        assert!(
            std::fs::symlink_metadata(w.join("l"))
                .expect("meta")
                .is_file()
        );
        // No temporary files are left behind.
        let names: Vec<_> = std::fs::read_dir(&w)
            .expect("read_dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        // Writing the root or outside it is refused.
        assert!(dir.write_atomic(&w, b"x").is_err());
        let e = dir.write_atomic(&target, b"x").expect_err("outside");
        assert!(is_escape(&e), "{e}");
    }
}

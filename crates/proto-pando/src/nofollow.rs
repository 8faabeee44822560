//! The files discovery keeps, reached without following a link somebody
//! else planted. The workspace's `.pando` can be written by the model's
//! sandboxed commands and the registry by any local user, so every entry is
//! one name opened beneath a directory handle with `O_NOFOLLOW`, checked by
//! `fstat` on the descriptor (kind, owner, links) before anything is
//! changed, and changed only through descriptors (`fchmod`, never a chmod by
//! path). Every path here is a single name under a handle, so `O_NOFOLLOW`
//! on each open is the whole check: no `openat2` is needed.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use crate::discovery::DiscoveryError;

/// How a directory is opened to serve as the base of `*at` calls.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// How a file another process may have planted is opened: `NONBLOCK` so a
/// FIFO cannot hang the open or the read, `NOCTTY` so a terminal never
/// becomes ours; `NOFOLLOW` so a link is refused, not followed.
pub(crate) const UNTRUSTED_FLAGS: OFlags = OFlags::NOFOLLOW
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY)
    .union(OFlags::CLOEXEC);

/// The most of a lock file or registry entry read: both are a few hundred
/// bytes; a huge file planted there is not read whole.
pub(crate) const READ_LIMIT: u64 = 64 * 1024;

/// `DiscoveryError::Refused` for `path`.
pub(crate) fn refused(path: &Path, why: impl Into<String>) -> DiscoveryError {
    DiscoveryError::Refused {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// `DiscoveryError::Io` for `what`, from an `Errno`.
pub(crate) fn os(what: impl Into<String>) -> impl FnOnce(Errno) -> DiscoveryError {
    let what = what.into();
    move |e| DiscoveryError::Io {
        what,
        source: e.into(),
    }
}

/// This process's effective user: the only owner its files may have.
pub(crate) fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// What a file of kind `kind` is, for a message.
pub(crate) fn describe(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Unknown => "of an unknown kind",
    }
}

/// The kind of `st`.
pub(crate) fn kind(st: &Stat) -> FileType {
    FileType::from_raw_mode(st.st_mode)
}

/// Why opening `name` in `dir` with `O_NOFOLLOW` failed with `e`, if it is
/// because of what the entry is (a symlink gives `ELOOP`, or `ENOTDIR`
/// with `O_DIRECTORY`, or `EMLINK` on FreeBSD; a non-directory `ENOTDIR`;
/// a socket `ENXIO`): that entry's kind.
fn kind_refused(dir: BorrowedFd<'_>, name: &OsStr, e: Errno) -> Option<FileType> {
    if !matches!(
        e,
        Errno::LOOP | Errno::NOTDIR | Errno::MLINK | Errno::NXIO | Errno::ISDIR
    ) {
        return None;
    }
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|st| kind(&st))
}

/// Opens the directory `name` of `parent`, creating it with `create_mode`
/// when missing; a symlink or anything but a directory is refused. `path`
/// names it in messages.
pub(crate) fn open_dir(
    parent: BorrowedFd<'_>,
    name: &OsStr,
    create_mode: u32,
    path: &Path,
) -> Result<(OwnedFd, Stat), DiscoveryError> {
    // `mkdirat` never follows a link in the last component: an existing
    // one (even dangling) gives EEXIST, and the open below refuses it.
    match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(create_mode)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(os(format!("cannot create {}", path.display()))(e)),
    }
    let fd = rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty()).map_err(|e| {
        match kind_refused(parent, name, e) {
            Some(k) if k != FileType::Directory => refused(
                path,
                format!(
                    "it is {}, not a directory; Gantry does not follow or replace what it finds \
                     there (remove it and start again)",
                    describe(k)
                ),
            ),
            _ => os(format!("cannot open {}", path.display()))(e),
        }
    })?;
    let st = rustix::fs::fstat(&fd).map_err(os(format!("cannot stat {}", path.display())))?;
    // Swapped between the open and here? A descriptor of a directory is
    // what O_DIRECTORY gave; checked anyway, cheaply.
    if kind(&st) != FileType::Directory {
        return Err(refused(
            path,
            format!("it is {}, not a directory", describe(kind(&st))),
        ));
    }
    Ok((fd, st))
}

/// Opens the file `name` of `dir` for reading and writing, created with
/// `mode` when missing (never truncated: a live holder's content stays
/// readable); anything but a regular file this process's user owns, with
/// no other hard link, is refused before it is changed in any way.
pub(crate) fn open_own_file(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    mode: u32,
    path: &Path,
) -> Result<File, DiscoveryError> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDWR | OFlags::CREATE | UNTRUSTED_FLAGS,
        Mode::from_raw_mode(mode),
    )
    .map_err(|e| match kind_refused(dir, name, e) {
        Some(k) if k != FileType::RegularFile => refused(
            path,
            format!(
                "it is {}, not a regular file; Gantry does not follow or replace what it finds \
                 there (remove it and start again)",
                describe(k)
            ),
        ),
        _ => os(format!("cannot open {}", path.display()))(e),
    })?;
    let st = rustix::fs::fstat(&fd).map_err(os(format!("cannot stat {}", path.display())))?;
    if kind(&st) != FileType::RegularFile {
        return Err(refused(
            path,
            format!(
                "it is {}, not a regular file; remove it and start again",
                describe(kind(&st))
            ),
        ));
    }
    check_owner(&st, path)?;
    // A hard link planted here would make our writes land in a file
    // elsewhere (the link count is all that tells it apart).
    if st.st_nlink != 1 {
        return Err(refused(
            path,
            format!(
                "it has {} hard links; writing it would change a file elsewhere (remove it and \
                 start again)",
                st.st_nlink
            ),
        ));
    }
    Ok(File::from(fd))
}

/// Writes `content` as the file `name` of `dir` with `mode`, replacing
/// whatever has that name (a link is replaced, never followed): a new temp
/// file made with `O_EXCL | O_NOFOLLOW`, `fchmod`, then `renameat` over the
/// name.
pub(crate) fn replace_file(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    content: &[u8],
    mode: u32,
) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut made = None;
    for _ in 0..64 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        // Hidden and not `*.json`: readers of the registry skip it.
        let mut tmp = OsString::from(".");
        tmp.push(name);
        tmp.push(format!(".{}.{n}.tmp", std::process::id()));
        match rustix::fs::openat(dir, tmp.as_os_str(), flags, Mode::from_raw_mode(0o600)) {
            Ok(fd) => {
                made = Some((tmp, fd));
                break;
            }
            // Taken, by a file of ours or one planted: another name.
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    let Some((tmp, fd)) = made else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "no free name for a temporary file",
        ));
    };
    let written = (|| -> std::io::Result<()> {
        let mut file = File::from(fd);
        file.write_all(content)?;
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
        rustix::fs::renameat(dir, tmp.as_os_str(), dir, name)?;
        Ok(())
    })();
    if written.is_err() {
        unlink(dir, &tmp);
    }
    written
}

/// Refuses `st` (of `path`) unless this process's user owns it.
pub(crate) fn check_owner(st: &Stat, path: &Path) -> Result<(), DiscoveryError> {
    let me = euid();
    if st.st_uid == me {
        return Ok(());
    }
    Err(refused(
        path,
        format!(
            "it is owned by uid {}, not by this process's user (uid {me}); Gantry writes only \
             files its own user owns",
            st.st_uid
        ),
    ))
}

/// Opens the existing file `name` of `dir` for reading if it is a regular
/// file (a link, FIFO, socket or device is skipped, never waited on), with
/// its `fstat`.
pub(crate) fn open_regular(dir: BorrowedFd<'_>, name: &OsStr) -> Option<(File, Stat)> {
    // Looked at first so a device is not even opened; the open's flags
    // cover an entry swapped in meanwhile, and `fstat` has the last word.
    let before = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    if kind(&before) != FileType::RegularFile {
        return None;
    }
    let fd = rustix::fs::openat(dir, name, OFlags::RDONLY | UNTRUSTED_FLAGS, Mode::empty()).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    (kind(&st) == FileType::RegularFile).then(|| (File::from(fd), st))
}

/// Up to [`READ_LIMIT`] bytes of `file`, as text; `None` if unreadable.
pub(crate) fn read_bounded(file: &mut File) -> Option<String> {
    let mut text = String::new();
    file.take(READ_LIMIT).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Whether the entry `name` of `dir` is still the file `st` describes.
pub(crate) fn same_file(dir: BorrowedFd<'_>, name: &OsStr, st: &Stat) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|now| now.st_dev == st.st_dev && now.st_ino == st.st_ino)
}

/// Removes the entry `name` of `dir` (a file, never followed); best effort.
pub(crate) fn unlink(dir: impl AsFd, name: &OsStr) {
    let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
}

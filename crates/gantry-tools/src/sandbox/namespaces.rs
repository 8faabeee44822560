//! Each sandboxed command's own PID and mount namespaces (and, where the
//! runtime is not root, the user namespace that allows them), as codex gets
//! them from bubblewrap.
//!
//! Inside, `bash` is PID 1 of a namespace of its own, under a `/proc`
//! mounted for it: the runtime's process (its environment, command line,
//! memory, open files) is not there to read, as root or not. `/tmp` (and
//! `$TMPDIR`, if elsewhere) is the thread's private temp dir; the paths a
//! command needs beneath the real one (its workspace and writable roots,
//! `$HOME`, `PATH` entries, the files `protected_readable` names) are
//! mounted back at their own paths. A hidden path (the data dir, a
//! `readable_denied` path) that one of those would show again is covered
//! by an empty read-only directory (a file: by `/dev/null`).
//!
//! Why covers and not Landlock: Landlock judges a file by the rules on the
//! directories it walks up through, and a walk up from a tree mounted back
//! into the private temp dir leaves that tree at its mount point and goes on
//! through the temp dir, which is writable. So within those trees only the
//! mount decides: trees that are not writable are mounted read-only, and
//! what must stay unread is covered.
//!
//! A [`Plan`] is built in the parent (it allocates and touches the disk);
//! [`Plan::enter`] runs in the cloned child with raw system calls only.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

use super::SandboxError;

/// The most trees one command's namespace mounts back or keeps inside a
/// cover: the child holds them in a fixed array, since it may not allocate.
const MAX_TREES: usize = 48;

/// Whether commands can have namespaces of their own on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespaces {
    /// The runtime may make PID and mount namespaces itself (root, or
    /// `CAP_SYS_ADMIN`).
    Direct,
    /// Through an unprivileged user namespace that maps the runtime's user
    /// and group to themselves.
    User,
    /// Neither works; why. Commands are still confined by Landlock and
    /// seccomp, but see the runtime's processes under `/proc` and share the
    /// temp dir.
    Unavailable(String),
}

impl Namespaces {
    /// Probes the kernel once per process (a clone of a child that sets
    /// the namespaces up and exits, ≈ 1 ms) and remembers the answer.
    pub fn probe() -> &'static Namespaces {
        static PROBED: OnceLock<Namespaces> = OnceLock::new();
        PROBED.get_or_init(probe_now)
    }

    /// Whether commands get namespaces of their own.
    pub fn available(&self) -> bool {
        !matches!(self, Namespaces::Unavailable(_))
    }

    fn clone_flags(&self) -> libc::c_int {
        match self {
            Namespaces::Direct => libc::CLONE_NEWPID | libc::CLONE_NEWNS,
            Namespaces::User => libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWUSER,
            Namespaces::Unavailable(_) => 0,
        }
    }
}

/// The variable that turns the namespaces off (`off`): for a kernel where
/// they misbehave, and to measure what they cost.
pub const NAMESPACES_VAR: &str = "GANTRY_SANDBOX_NAMESPACES";

fn probe_now() -> Namespaces {
    if std::env::var_os(NAMESPACES_VAR).is_some_and(|v| v == "off") {
        return Namespaces::Unavailable(format!("turned off by {NAMESPACES_VAR}=off"));
    }
    // SAFETY: geteuid has no failure mode.
    let root = unsafe { libc::geteuid() } == 0;
    let mut tried = Vec::new();
    let kinds: &[Namespaces] = if root {
        &[Namespaces::Direct, Namespaces::User]
    } else {
        &[Namespaces::User]
    };
    for kind in kinds {
        let plan = Plan::bare(kind);
        match plan.trial() {
            Ok(()) => return kind.clone(),
            Err(e) => tried.push(e.to_string()),
        }
    }
    Namespaces::Unavailable(tried.join("; "))
}

/// The steps of one command's namespace setup, in the child.
pub(crate) struct Plan {
    flags: libc::c_int,
    /// `setgroups`, `uid_map`, `gid_map` contents, for a user namespace.
    ids: Option<[CString; 2]>,
    /// Paths whose trees are taken (`open_tree`) before anything is
    /// mounted, so that they can be mounted where the temp dir hides them.
    captures: Vec<CString>,
    steps: Vec<Step>,
}

/// One mount step; targets are paths as the child sees them by then.
enum Step {
    /// Mounts captured tree number `tree` at `target`.
    Attach {
        tree: usize,
        target: CString,
        read_only: bool,
    },
    /// An empty tmpfs over the directory `target` (read-only once sealed).
    Cover { target: CString },
    /// `/dev/null` over the file `target`.
    CoverFile { target: CString },
    /// A directory inside a cover, for a tree to be mounted on.
    Mkdir { path: CString },
    /// An empty file inside a cover, for a file to be mounted on.
    Touch { path: CString },
    /// Makes the cover at `target` read-only.
    Seal { target: CString },
}

/// What failed in the child, for the error the parent reports.
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
enum Stage {
    IdMaps = 1,
    Private,
    Capture,
    Proc,
    Attach,
    Cover,
    Seal,
}

impl Stage {
    fn from_i32(v: i32) -> Option<Self> {
        Some(match v {
            1 => Stage::IdMaps,
            2 => Stage::Private,
            3 => Stage::Capture,
            4 => Stage::Proc,
            5 => Stage::Attach,
            6 => Stage::Cover,
            7 => Stage::Seal,
            _ => return None,
        })
    }

    fn doing(self) -> &'static str {
        match self {
            Stage::IdMaps => "mapping the user and group into a user namespace",
            Stage::Private => "making the mount namespace private",
            Stage::Capture => "taking a path to mount back over the temp dir",
            Stage::Proc => "mounting /proc for the PID namespace",
            Stage::Attach => "mounting a path back",
            Stage::Cover => "covering a hidden path",
            Stage::Seal => "making a cover read-only",
        }
    }
}

/// Where a setup step failed: the stage and the errno.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Failure {
    stage: i32,
    errno: i32,
}

impl Failure {
    /// Records a failure where the parent can read it (an atomic: the child
    /// writes nothing else of the parent's).
    pub(crate) fn store(self, cell: &AtomicI32) {
        cell.store(
            (self.stage << 16) | (self.errno & 0xffff),
            Ordering::Release,
        );
    }

    /// The failure stored in `cell`, if any.
    pub(crate) fn load(cell: &AtomicI32) -> Option<io::Error> {
        let v = cell.load(Ordering::Acquire);
        if v == 0 {
            return None;
        }
        if v >> 16 == 0 {
            return Some(io::Error::from_raw_os_error(v));
        }
        let os = io::Error::from_raw_os_error(v & 0xffff);
        let doing = Stage::from_i32(v >> 16).map_or("setting up the sandbox", Stage::doing);
        Some(io::Error::new(os.kind(), format!("{doing}: {os}")))
    }

    /// An errno of a step outside the namespace setup.
    pub(crate) fn other(errno: i32) -> Self {
        Self { stage: 0, errno }
    }
}

/// What a plan keeps in view: a path and whether it stays writable.
#[derive(Debug, Clone)]
pub(crate) struct Visible {
    /// Canonical.
    pub(crate) path: PathBuf,
    /// Mounted writable (Landlock still decides); else read-only.
    pub(crate) writable: bool,
}

/// What [`Plan::build`] needs to know.
pub(crate) struct Layout<'a> {
    /// The thread's private temp dir (created if missing); `None`: the
    /// temp dirs stay shared.
    pub(crate) private_tmp: Option<&'a Path>,
    /// What commands must still see, canonical.
    pub(crate) visible: &'a [Visible],
    /// What they must not read, canonical: covered where a visible tree
    /// would show it.
    pub(crate) hidden: &'a [PathBuf],
}

impl Plan {
    /// PID and mount namespaces with a fresh `/proc` and nothing else.
    fn bare(kind: &Namespaces) -> Self {
        // SAFETY: getuid/getgid have no failure mode.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let ids = matches!(kind, Namespaces::User).then(|| {
            // Built from integers: no NUL inside.
            [
                CString::new(format!("{uid} {uid} 1")).unwrap_or_default(),
                CString::new(format!("{gid} {gid} 1")).unwrap_or_default(),
            ]
        });
        Self {
            flags: kind.clone_flags(),
            ids,
            captures: Vec::new(),
            steps: Vec::new(),
        }
    }

    /// The namespaces of a command: `None` when this machine has none.
    pub(crate) fn build(layout: &Layout<'_>) -> Result<Option<Self>, SandboxError> {
        let kind = Namespaces::probe();
        if !kind.available() {
            return Ok(None);
        }
        let mut plan = Self::bare(kind);
        let setup = |what: &str, path: &Path, e: io::Error| {
            SandboxError::Setup(format!("{what} {}: {e}", path.display()))
        };

        // The temp dirs, replaced by the private one unless a writable
        // visible path is one of them or holds one (a workspace of `/tmp`).
        let mut mounted: Vec<&Visible> = Vec::new();
        if let Some(private) = layout.private_tmp {
            make_private_dir(private).map_err(|e| setup("creating", private, e))?;
            let private =
                std::fs::canonicalize(private).map_err(|e| setup("finding", private, e))?;
            for temp in temp_dirs() {
                let held = layout
                    .visible
                    .iter()
                    .any(|v| v.writable && temp.starts_with(&v.path));
                if held || private == temp {
                    continue;
                }
                let tree = plan.capture(&private)?;
                plan.steps.push(Step::Attach {
                    tree,
                    target: c_path(&temp)?,
                    read_only: false,
                });
                let mut inside: Vec<&Visible> = layout
                    .visible
                    .iter()
                    .filter(|v| v.path.starts_with(&temp) && v.path != temp)
                    .collect();
                // Outer trees first: an inner one is mounted inside them.
                inside.sort_by_key(|v| v.path.components().count());
                for v in inside {
                    let outer = mounted.iter().find(|m| v.path.starts_with(&m.path));
                    match outer {
                        // Already in view through the outer tree, with
                        // at least the rights it needs.
                        Some(m) if m.writable || !v.writable => continue,
                        Some(_) => {}
                        None => {
                            let rel = v.path.strip_prefix(&temp).unwrap_or(&v.path);
                            make_skeleton(&private, rel, v.path.is_dir())
                                .map_err(|e| setup("preparing the mount point of", &v.path, e))?;
                        }
                    }
                    let tree = plan.capture(&v.path)?;
                    plan.steps.push(Step::Attach {
                        tree,
                        target: c_path(&v.path)?,
                        read_only: !v.writable,
                    });
                    mounted.push(v);
                }
            }
        }

        // Covers over hidden paths that a visible tree would show: one
        // mounted back, or a writable root (Landlock cannot deny inside it).
        let mut hidden_paths: Vec<&PathBuf> = layout.hidden.iter().collect();
        hidden_paths.sort_by_key(|h| h.components().count());
        let mut covered: Vec<&PathBuf> = Vec::new();
        for hidden in hidden_paths {
            // Under a cover already: out of view, and no path to mount on.
            if covered.iter().any(|c| hidden.starts_with(c)) {
                continue;
            }
            let shown = mounted.iter().any(|m| hidden.starts_with(&m.path))
                || layout
                    .visible
                    .iter()
                    .any(|v| v.writable && hidden.starts_with(&v.path));
            if !shown || layout.visible.iter().any(|v| v.path == *hidden) {
                continue;
            }
            covered.push(hidden);
            let target = c_path(hidden)?;
            if !hidden.is_dir() {
                plan.steps.push(Step::CoverFile { target });
                continue;
            }
            plan.steps.push(Step::Cover {
                target: target.clone(),
            });
            let mut inside: Vec<&Visible> = layout
                .visible
                .iter()
                .filter(|v| v.path.starts_with(hidden) && v.path != *hidden)
                .collect();
            inside.sort_by_key(|v| v.path.components().count());
            let mut kept: Vec<&Visible> = Vec::new();
            for v in inside {
                if kept
                    .iter()
                    .any(|k| v.path.starts_with(&k.path) && (k.writable || !v.writable))
                {
                    continue;
                }
                if !kept.iter().any(|k| v.path.starts_with(&k.path)) {
                    plan.skeleton_steps(hidden, &v.path)?;
                }
                let tree = plan.capture(&v.path)?;
                plan.steps.push(Step::Attach {
                    tree,
                    target: c_path(&v.path)?,
                    read_only: !v.writable,
                });
                kept.push(v);
            }
            plan.steps.push(Step::Seal { target });
        }
        Ok(Some(plan))
    }

    fn capture(&mut self, path: &Path) -> Result<usize, SandboxError> {
        if self.captures.len() == MAX_TREES {
            return Err(SandboxError::Setup(format!(
                "more than {MAX_TREES} paths to keep in view in the command's namespace"
            )));
        }
        self.captures.push(c_path(path)?);
        Ok(self.captures.len() - 1)
    }

    /// Steps that make `path`'s mount point inside the cover at `cover`.
    fn skeleton_steps(&mut self, cover: &Path, path: &Path) -> Result<(), SandboxError> {
        let rel = path.strip_prefix(cover).unwrap_or(path);
        let mut at = cover.to_path_buf();
        let parts: Vec<_> = rel.components().collect();
        for (i, part) in parts.iter().enumerate() {
            at.push(part);
            let last = i + 1 == parts.len();
            let path = c_path(&at)?;
            self.steps.push(if last && !at.is_dir() {
                Step::Touch { path }
            } else {
                Step::Mkdir { path }
            });
        }
        Ok(())
    }

    /// The `CLONE_NEW*` flags the child is cloned with.
    pub(crate) fn clone_flags(&self) -> libc::c_int {
        self.flags
    }

    /// Sets the namespaces up. Runs in the cloned child (PID 1 of its new
    /// PID namespace), before `chdir` and Landlock.
    ///
    /// # Safety
    /// Only in a child cloned with [`Plan::clone_flags`], which shares the
    /// parent's memory: raw system calls on `self`'s strings, nothing
    /// written but the child's own stack.
    pub(crate) unsafe fn enter(&self) -> Result<(), Failure> {
        let fail = |stage: Stage| Failure {
            stage: stage as i32,
            errno: last_errno(),
        };
        // SAFETY (the whole block): system calls on C strings and locals
        // that live across each call.
        unsafe {
            if let Some([uid_map, gid_map]) = &self.ids {
                // The runtime is not dumpable, so its `/proc` files belong
                // to root and the maps cannot be opened: dumpable for these
                // few calls (the memory, and so the flag, is the runtime's;
                // `clone_vfork` runs one such child at a time, and no
                // command can see the runtime meanwhile).
                let dumpable = libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0);
                if dumpable == 0 {
                    libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
                }
                let written = write_id_maps(uid_map.to_bytes(), gid_map.to_bytes());
                let failure = written.map_err(|()| fail(Stage::IdMaps));
                if dumpable == 0 {
                    libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
                }
                failure?;
            }
            make_mounts_private().map_err(|()| fail(Stage::Private))?;
            let mut trees = [-1 as libc::c_int; MAX_TREES];
            for (slot, source) in trees.iter_mut().zip(&self.captures) {
                let fd = libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    source.as_ptr(),
                    libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC | libc::AT_RECURSIVE as u32,
                );
                if fd < 0 {
                    return Err(fail(Stage::Capture));
                }
                *slot = fd as libc::c_int;
            }
            mount_proc().map_err(|()| fail(Stage::Proc))?;
            for step in &self.steps {
                match step {
                    Step::Attach {
                        tree,
                        target,
                        read_only,
                    } => {
                        let fd = trees[*tree];
                        if *read_only && set_read_only(fd) != 0 {
                            return Err(fail(Stage::Attach));
                        }
                        if libc::syscall(
                            libc::SYS_move_mount,
                            fd,
                            c"".as_ptr(),
                            libc::AT_FDCWD,
                            target.as_ptr(),
                            libc::MOVE_MOUNT_F_EMPTY_PATH,
                        ) != 0
                        {
                            return Err(fail(Stage::Attach));
                        }
                    }
                    Step::Cover { target } => {
                        if libc::mount(
                            c"tmpfs".as_ptr(),
                            target.as_ptr(),
                            c"tmpfs".as_ptr(),
                            COVER_FLAGS,
                            c"mode=0755,size=64k".as_ptr().cast(),
                        ) != 0
                        {
                            return Err(fail(Stage::Cover));
                        }
                    }
                    Step::CoverFile { target } => {
                        if libc::mount(
                            c"/dev/null".as_ptr(),
                            target.as_ptr(),
                            std::ptr::null(),
                            libc::MS_BIND,
                            std::ptr::null(),
                        ) != 0
                        {
                            return Err(fail(Stage::Cover));
                        }
                    }
                    Step::Mkdir { path } => {
                        if libc::mkdir(path.as_ptr(), 0o755) != 0 && last_errno() != libc::EEXIST {
                            return Err(fail(Stage::Cover));
                        }
                    }
                    Step::Touch { path } => {
                        let fd = libc::open(
                            path.as_ptr(),
                            libc::O_WRONLY | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                            0o644,
                        );
                        if fd < 0 {
                            return Err(fail(Stage::Cover));
                        }
                        libc::close(fd);
                    }
                    Step::Seal { target } => {
                        if libc::mount(
                            std::ptr::null(),
                            target.as_ptr(),
                            std::ptr::null(),
                            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | COVER_FLAGS,
                            std::ptr::null(),
                        ) != 0
                        {
                            return Err(fail(Stage::Seal));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Clones a child that enters these namespaces and exits: whether they
    /// work here.
    fn trial(&self) -> io::Result<()> {
        struct Trial<'a> {
            plan: &'a Plan,
            failure: AtomicI32,
        }
        extern "C" fn trial_main(arg: *mut libc::c_void) -> libc::c_int {
            // SAFETY: `arg` is the `Trial` that `trial` keeps alive until
            // the child has exited.
            let trial = unsafe { &*arg.cast::<Trial<'_>>() };
            // SAFETY: this is the child cloned with the plan's flags.
            if let Err(failure) = unsafe { trial.plan.enter() } {
                failure.store(&trial.failure);
            }
            // SAFETY: ends only the child, running nothing of the parent's.
            unsafe { libc::_exit(0) }
        }
        let trial = Trial {
            plan: self,
            failure: AtomicI32::new(0),
        };
        // SAFETY: `trial_main` only reads `trial` and stores into its
        // atomic; `trial` lives until the child has exited (CLONE_VFORK).
        let (pid, _pidfd) = unsafe {
            super::clone::clone_vfork(self.flags, trial_main, (&raw const trial).cast_mut().cast())?
        };
        super::clone::reap(pid, 0)?;
        match Failure::load(&trial.failure) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Flags of a cover's tmpfs (kept when it is sealed).
const COVER_FLAGS: libc::c_ulong = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;

/// `/tmp` and `$TMPDIR`, canonical, existing, each once.
fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in [PathBuf::from("/tmp"), std::env::temp_dir()] {
        if let Ok(dir) = std::fs::canonicalize(dir)
            && dir.is_dir()
            && dir != Path::new("/")
            && !dirs.contains(&dir)
        {
            dirs.push(dir);
        }
    }
    dirs
}

/// Makes the private temp dir: its parents as needed, itself mode 0700.
fn make_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if let Some(parent) = dir.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(dir)?;
            if !meta.is_dir() {
                return Err(io::Error::other("it exists and is not a directory"));
            }
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        }
        Err(e) => Err(e),
    }
}

/// Makes `rel` inside the private temp dir `root` (a directory, or an empty
/// file when `dir` is false) to mount a tree on, following no symlink:
/// commands write this dir, and one could have planted a link where the
/// mount point goes. Whatever is in the way is removed (the dir is the
/// thread's own scratch space, and the real path's content is mounted
/// there anyway).
fn make_skeleton(root: &Path, rel: &Path, dir: bool) -> io::Result<()> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let open_dir = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY;
    let mut at: OwnedFd = rustix::fs::open(root, open_dir, Mode::empty())?;
    let parts: Vec<_> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    for (i, name) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let mut tries = 0;
        loop {
            tries += 1;
            if last && !dir {
                let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                match rustix::fs::openat(at.as_fd(), *name, flags, Mode::from_raw_mode(0o600)) {
                    Ok(_) => return Ok(()),
                    Err(e) if tries < 3 && e != rustix::io::Errno::NOENT => {
                        remove_entry(&at, name)?;
                    }
                    Err(e) => return Err(e.into()),
                }
                continue;
            }
            match rustix::fs::openat(at.as_fd(), *name, open_dir, Mode::empty()) {
                Ok(next) => {
                    at = next;
                    break;
                }
                Err(rustix::io::Errno::NOENT) if tries < 3 => {
                    match rustix::fs::mkdirat(at.as_fd(), *name, Mode::from_raw_mode(0o700)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) if tries < 3 => {
                    rustix::fs::unlinkat(at.as_fd(), *name, AtFlags::empty())?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// Removes `name` in `dir`, a file or an empty directory.
fn remove_entry(dir: &OwnedFd, name: &std::ffi::OsStr) -> io::Result<()> {
    use rustix::fs::AtFlags;
    match rustix::fs::unlinkat(dir.as_fd(), name, AtFlags::empty()) {
        Err(rustix::io::Errno::ISDIR) => {
            rustix::fs::unlinkat(dir.as_fd(), name, AtFlags::REMOVEDIR)?;
            Ok(())
        }
        other => other.map_err(Into::into),
    }
}

fn c_path(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        SandboxError::InvalidPolicy(format!("a NUL byte in the path {}", path.display()))
    })
}

fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Maps the caller's user and group to themselves in the user namespace it
/// just entered: `setgroups` first, as an unprivileged writer must. The
/// errno says why not.
///
/// # Safety
/// System calls only; callable between a clone or fork and exec.
pub(super) unsafe fn write_id_maps(uid_map: &[u8], gid_map: &[u8]) -> Result<(), ()> {
    // SAFETY: see `write_file`.
    unsafe {
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", uid_map)?;
        write_file(c"/proc/self/gid_map", gid_map)
    }
}

/// Makes every mount of the caller's (new) mount namespace private, so
/// that nothing mounted there propagates back to the host.
///
/// # Safety
/// A system call on static strings; callable between clone and exec.
pub(super) unsafe fn make_mounts_private() -> Result<(), ()> {
    // SAFETY: mount with static C strings and null pointers.
    let rc = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if rc == 0 { Ok(()) } else { Err(()) }
}

/// Mounts a `/proc` for the caller's PID namespace over the old one.
///
/// # Safety
/// A system call on static strings; callable between clone and exec, in
/// the new PID namespace.
pub(super) unsafe fn mount_proc() -> Result<(), ()> {
    // SAFETY: mount with static C strings and a null data pointer.
    let rc = unsafe {
        libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    };
    if rc == 0 { Ok(()) } else { Err(()) }
}

/// Writes `data` to the file `path` (a `/proc` control file).
///
/// # Safety
/// System calls only; callable in the cloned child.
unsafe fn write_file(path: &CStr, data: &[u8]) -> Result<(), ()> {
    // SAFETY: open/write/close on a C string and a slice that outlive the
    // calls.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let failed = written < 0 || written.unsigned_abs() != data.len();
        if failed {
            // Keep write's errno, not close's.
            let errno = last_errno();
            libc::close(fd);
            *libc::__errno_location() = errno;
            return Err(());
        }
        libc::close(fd);
    }
    Ok(())
}

/// Makes the detached tree `fd` read-only, with everything beneath it.
///
/// # Safety
/// A system call on a local; callable in the cloned child.
unsafe fn set_read_only(fd: libc::c_int) -> libc::c_long {
    let attr = libc::mount_attr {
        attr_set: libc::MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: mount_setattr reads `attr`, which outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_RECURSIVE,
            &raw const attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    }
}

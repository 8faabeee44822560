//! What git will not say about a workspace: its special files, nested
//! repositories and files over the size limit. A checkpoint reports them and
//! leaves them out (git would skip the first without a word, record the
//! second as a gitlink and hash the third, however large).
//!
//! One walk of the directory listing, honouring the same ignore rules: the
//! listing gives each entry's type, so special files and nested
//! repositories cost no stat. A file's size is read only where a new large
//! file can have appeared: in a directory that changed since the last scan
//! (an entry added, removed or renamed changes its directory's mtime), and
//! for the files already over the limit. What the last scan saw is kept in
//! the store (`gantry-scan`); without it, or when an ignore file changed,
//! every file's size is read.

use std::collections::{HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::CheckpointError;
use crate::not_kept::{NotKept, NotKeptReason};

/// The file in the store holding what the last scan saw.
pub(crate) const FILE: &str = "gantry-scan";
const HEADER: &[u8] = b"gantry-scan 1";

/// A directory modified this close before a scan is read again at the next:
/// an entry added within the same timestamp tick (a second, on some file
/// systems) leaves the directory's mtime as the scan saw it.
const RACY_NS: i128 = 2_000_000_000;

/// What identifies a directory's or ignore file's state: a change to its
/// entries moves its mtime, a replacement its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sig {
    mtime: i128,
    ctime: i128,
    ino: u64,
}

impl Sig {
    fn of(meta: &std::fs::Metadata) -> Self {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Self {
            mtime: ns(meta.mtime(), meta.mtime_nsec()),
            ctime: ns(meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
        }
    }
}

/// What one scan saw, kept for the next.
#[derive(Debug, Default)]
struct Memory {
    limit: u64,
    /// When the scan started (ns since the epoch).
    scanned_at: i128,
    dirs: HashMap<PathBuf, Sig>,
    /// `.gitignore` files (relative) and the excludes files git reads
    /// (absolute): when one changes, what is ignored may have.
    ignores: HashMap<PathBuf, Sig>,
    /// Files over the limit: left out of the checkpoint.
    large: HashSet<PathBuf>,
    /// Nested repositories: left out.
    nested: HashSet<PathBuf>,
    /// The tree the store's index held after the last snapshot, and the
    /// index file as it was then: while the file is the same, so is the
    /// tree.
    index: Option<(String, Sig)>,
}

/// One scan of the workspace: what is not kept, and what to leave out of
/// `git add`.
#[derive(Debug)]
pub(crate) struct Scan {
    /// Every path not kept, and why.
    pub(crate) not_kept: Vec<NotKept>,
    memory: Memory,
    /// What the scan before left out.
    before: HashSet<PathBuf>,
    store_dir: PathBuf,
}

impl Scan {
    /// The paths `git add` must leave out: files over the limit and nested
    /// repositories.
    pub(crate) fn left_out(&self) -> impl Iterator<Item = &Path> {
        self.memory
            .large
            .iter()
            .chain(&self.memory.nested)
            .map(PathBuf::as_path)
    }

    /// The paths left out now that the scan before kept: if the store's
    /// index still holds them (a file that grew, a directory that became a
    /// repository), they come out of it.
    pub(crate) fn newly_left_out(&self) -> Vec<&Path> {
        let mut out: Vec<_> = self
            .left_out()
            .filter(|p| !self.before.contains(*p))
            .collect();
        out.sort();
        out
    }

    /// Records a file found over the limit after the scan (a kept file
    /// that grew in place, which changes no directory).
    pub(crate) fn add_large(&mut self, path: PathBuf, size: u64) {
        if self.memory.large.insert(path.clone()) {
            self.not_kept.push(NotKept {
                path,
                reason: NotKeptReason::TooLarge(size),
            });
            self.not_kept.sort_by(|a, b| a.path.cmp(&b.path));
        }
    }

    /// The tree the store's index at `index` holds, if known without
    /// asking git: nobody wrote the file since the last snapshot noted it.
    pub(crate) fn tree_of_index(&self, index: &Path) -> Option<&str> {
        let (tree, sig) = self.memory.index.as_ref()?;
        let now = Sig::of(&std::fs::symlink_metadata(index).ok()?);
        (now == *sig).then_some(tree.as_str())
    }

    /// Notes that the index at `index` now holds `tree`.
    pub(crate) fn set_tree(&mut self, tree: &str, index: &Path) {
        self.memory.index = std::fs::symlink_metadata(index)
            .ok()
            .map(|meta| (tree.to_owned(), Sig::of(&meta)));
    }

    /// Whether `path` is left out of `git add`.
    pub(crate) fn is_left_out(&self, path: &Path) -> bool {
        self.memory.large.contains(path) || self.memory.nested.contains(path)
    }

    /// Keeps what this scan saw for the next one.
    pub(crate) fn save(&self) -> Result<(), CheckpointError> {
        let path = self.store_dir.join(FILE);
        let tmp = self.store_dir.join(format!("{FILE}.tmp"));
        let io = |source| CheckpointError::Io {
            path: path.clone(),
            source,
        };
        std::fs::write(&tmp, encode(&self.memory)).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }
}

/// Scans `workspace` (its store at `store_dir`, skipped if inside it) for
/// what a checkpoint cannot keep under `limit` bytes. `exclude_files` are
/// the excludes files git reads beside the `.gitignore` files.
pub(crate) fn scan(
    workspace: &Path,
    store_dir: &Path,
    limit: u64,
    exclude_files: &[PathBuf],
) -> Scan {
    let old = load(&store_dir.join(FILE))
        .filter(|m| m.limit == limit)
        .unwrap_or_default();
    let before: HashSet<PathBuf> = old.large.iter().chain(&old.nested).cloned().collect();
    let mut excludes = HashMap::new();
    for file in exclude_files {
        if let Ok(meta) = std::fs::symlink_metadata(file) {
            excludes.insert(file.clone(), Sig::of(&meta));
        }
    }
    let unchanged_excludes = exclude_files
        .iter()
        .all(|f| excludes.get(f) == old.ignores.get(f));
    let mut walked = walk(workspace, store_dir, limit, &old, !unchanged_excludes);
    let same_ignores = |walked: &Memory| {
        let old_files = old.ignores.iter().filter(|(p, _)| p.is_relative());
        let new_files = walked.ignores.iter().filter(|(p, _)| p.is_relative());
        old_files.count() == new_files.count()
            && walked
                .ignores
                .iter()
                .all(|(p, sig)| old.ignores.get(p) == Some(sig))
    };
    if unchanged_excludes && !same_ignores(&walked.0) {
        // An ignore file changed: a file unignored by it may be large in a
        // directory that did not change.
        walked = walk(workspace, store_dir, limit, &old, true);
    }
    let (mut memory, not_kept) = walked;
    memory.ignores.extend(excludes);
    memory.index = old.index;
    Scan {
        not_kept,
        memory,
        before,
        store_dir: store_dir.to_owned(),
    }
}

/// One walk: what it saw, and what is not kept. `everywhere` reads every
/// file's size, not only those in changed directories.
fn walk(
    workspace: &Path,
    store_dir: &Path,
    limit: u64,
    old: &Memory,
    everywhere: bool,
) -> (Memory, Vec<NotKept>) {
    let started = now_ns();
    let nested = Arc::new(Mutex::new(Vec::new()));
    let walk = {
        let nested = nested.clone();
        let store_dir = store_dir.to_owned();
        ignore::WalkBuilder::new(workspace)
            .hidden(false)
            .ignore(false)
            .parents(false)
            .require_git(false)
            .filter_entry(move |entry| {
                if entry.file_name() == ".git" || entry.path() == store_dir {
                    return false;
                }
                let dir = entry.file_type().is_some_and(|t| t.is_dir());
                if dir && entry.depth() > 0 && entry.path().join(".git").symlink_metadata().is_ok()
                {
                    // Git sees a repository of its own there: not ours.
                    if let Ok(mut found) = nested.lock() {
                        found.push(entry.path().to_owned());
                    }
                    return false;
                }
                true
            })
            .build()
    };
    let mut memory = Memory {
        limit,
        scanned_at: started,
        ..Memory::default()
    };
    let mut not_kept = Vec::new();
    // Whether each directory on the path to the current entry changed:
    // the walk is depth first, a directory before what it holds.
    let mut changed: Vec<bool> = Vec::new();
    for entry in walk.flatten() {
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(workspace) else {
            continue;
        };
        let depth = entry.depth();
        if kind.is_dir() {
            let Ok(meta) = entry.metadata() else { continue };
            let sig = Sig::of(&meta);
            let fresh = old.dirs.get(rel) == Some(&sig) && sig.mtime + RACY_NS < old.scanned_at;
            changed.truncate(depth);
            changed.push(everywhere || !fresh);
            memory.dirs.insert(rel.to_owned(), sig);
        } else if kind.is_file() {
            let parent_changed = depth
                .checked_sub(1)
                .and_then(|d| changed.get(d))
                .copied()
                .unwrap_or(true);
            if entry.file_name() == ".gitignore"
                && let Ok(meta) = entry.path().symlink_metadata()
            {
                memory.ignores.insert(rel.to_owned(), Sig::of(&meta));
            }
            if !parent_changed && !old.large.contains(rel) {
                continue;
            }
            if let Ok(meta) = entry.path().symlink_metadata()
                && meta.is_file()
                && meta.len() > limit
            {
                memory.large.insert(rel.to_owned());
                not_kept.push(NotKept {
                    path: rel.to_owned(),
                    reason: NotKeptReason::TooLarge(meta.len()),
                });
            }
        } else if kind.is_fifo()
            || kind.is_socket()
            || kind.is_block_device()
            || kind.is_char_device()
        {
            not_kept.push(NotKept {
                path: rel.to_owned(),
                reason: NotKeptReason::Special,
            });
        }
    }
    let nested = nested.lock().map(|n| n.clone()).unwrap_or_default();
    for dir in nested {
        if let Ok(rel) = dir.strip_prefix(workspace) {
            memory.nested.insert(rel.to_owned());
            not_kept.push(NotKept {
                path: rel.to_owned(),
                reason: NotKeptReason::NestedRepository,
            });
        }
    }
    not_kept.sort_by(|a, b| a.path.cmp(&b.path));
    (memory, not_kept)
}

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// `memory` as bytes: a header line, then NUL-terminated records (paths
/// are bytes, any but NUL).
fn encode(memory: &Memory) -> Vec<u8> {
    let mut out = HEADER.to_vec();
    out.extend_from_slice(format!(" {} {}\n", memory.limit, memory.scanned_at).as_bytes());
    let mut record = |kind: &str, sig: Option<&Sig>, path: &Path| {
        out.extend_from_slice(kind.as_bytes());
        if let Some(s) = sig {
            out.extend_from_slice(format!(" {} {} {}", s.mtime, s.ctime, s.ino).as_bytes());
        }
        out.push(b' ');
        out.extend_from_slice(path.as_os_str().as_bytes());
        out.push(0);
    };
    for (path, sig) in &memory.dirs {
        record("D", Some(sig), path);
    }
    for (path, sig) in &memory.ignores {
        record("I", Some(sig), path);
    }
    for path in &memory.large {
        record("L", None, path);
    }
    for path in &memory.nested {
        record("N", None, path);
    }
    if let Some((tree, sig)) = &memory.index {
        record("T", Some(sig), Path::new(tree));
    }
    out
}

/// What `encode` wrote at `path`, if it is that.
fn load(path: &Path) -> Option<Memory> {
    let bytes = std::fs::read(path).ok()?;
    let newline = bytes.iter().position(|b| *b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..newline]).ok()?;
    let mut words = header.strip_prefix("gantry-scan 1 ")?.split(' ');
    let mut memory = Memory {
        limit: words.next()?.parse().ok()?,
        scanned_at: words.next()?.parse().ok()?,
        ..Memory::default()
    };
    for record in bytes[newline + 1..].split(|b| *b == 0) {
        if record.is_empty() {
            continue;
        }
        let (kind, rest) = record.split_at(1);
        let rest = rest.strip_prefix(b" ")?;
        match kind {
            b"D" | b"I" | b"T" => {
                let parts: Vec<&[u8]> = rest.splitn(4, |b| *b == b' ').collect();
                let [mtime, ctime, ino, path] = parts[..] else {
                    return None;
                };
                let number = |b: &[u8]| std::str::from_utf8(b).ok()?.parse::<i128>().ok();
                let sig = Sig {
                    mtime: number(mtime)?,
                    ctime: number(ctime)?,
                    ino: u64::try_from(number(ino)?).ok()?,
                };
                let path = PathBuf::from(std::ffi::OsStr::from_bytes(path));
                match kind {
                    b"D" => {
                        memory.dirs.insert(path, sig);
                    }
                    b"I" => {
                        memory.ignores.insert(path, sig);
                    }
                    _ => memory.index = Some((path.to_string_lossy().into_owned(), sig)),
                }
            }
            b"L" => {
                memory
                    .large
                    .insert(PathBuf::from(std::ffi::OsStr::from_bytes(rest)));
            }
            b"N" => {
                memory
                    .nested
                    .insert(PathBuf::from(std::ffi::OsStr::from_bytes(rest)));
            }
            _ => return None,
        }
    }
    Some(memory)
}

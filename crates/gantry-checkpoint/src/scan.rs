//! What git will not say about a workspace: its special files, nested
//! repositories and files over the size limit. A checkpoint reports them and
//! leaves them out (git would skip the first without a word, record the
//! second as a gitlink and hash the third, however large).
//!
//! A new entry (file, FIFO, repository) changes its directory's mtime, so a
//! directory whose mtime, ctime and inode are as the last scan saw them
//! holds what it held then: its listing is not read again, only its
//! subdirectories are visited (one `lstat` each) and its large files'
//! sizes read. A changed directory is listed, with git's ignore rules
//! (`.gitignore` files, `info/exclude`, `core.excludesFile`), and its files'
//! sizes read. What the last scan saw is kept in the store (`gantry-scan`);
//! without it, or when an ignore file changed, every directory is listed.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::CheckpointError;
use crate::not_kept::{NotKept, NotKeptReason};

/// The file in the store holding what the last scan saw.
pub(crate) const FILE: &str = "gantry-scan";
const HEADER: &str = "gantry-scan 2";

/// A directory modified this close before a scan is listed again at the
/// next: an entry added within the same timestamp tick (a second, on some
/// file systems) leaves the directory's mtime as the scan saw it.
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

    fn at(path: &Path) -> Option<Self> {
        std::fs::symlink_metadata(path).ok().map(|m| Self::of(&m))
    }
}

/// One directory as a scan saw it.
#[derive(Debug, Clone, Default)]
struct Dir {
    sig: Option<Sig>,
    /// Its `.gitignore`, if any.
    gitignore: Option<Sig>,
    /// A repository of its own: not entered.
    nested: bool,
    /// Its subdirectories git does not ignore.
    subdirs: Vec<OsString>,
    /// Its special files git does not ignore.
    special: Vec<OsString>,
    /// Its files over the limit git does not ignore.
    large: Vec<OsString>,
}

/// What one scan saw, kept for the next.
#[derive(Debug, Default)]
struct Memory {
    limit: u64,
    /// When the scan started (ns since the epoch).
    scanned_at: i128,
    dirs: HashMap<PathBuf, Dir>,
    /// The excludes files git reads beside the `.gitignore` files.
    excludes: HashMap<PathBuf, Sig>,
    /// The tree the store's index held after the last snapshot, and the
    /// index file as it was then: while the file is the same, so is the
    /// tree.
    index: Option<(String, Sig)>,
    /// A tree the index's differs from at exactly these paths (those git
    /// said it changed since): what a checkpoint changed, without a diff.
    base: Option<(String, Vec<PathBuf>)>,
}

impl Memory {
    /// The paths left out of `git add`: large files and nested repositories.
    fn left_out(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.dirs.iter().flat_map(|(path, dir)| {
            let nested = dir.nested.then(|| path.clone());
            nested
                .into_iter()
                .chain(dir.large.iter().map(|name| path.join(name)))
        })
    }
}

/// One scan of the workspace: what is not kept, and what to leave out of
/// `git add`.
#[derive(Debug)]
pub(crate) struct Scan {
    /// Every path not kept, and why.
    pub(crate) not_kept: Vec<NotKept>,
    memory: Memory,
    /// What is left out now.
    left_out: HashSet<PathBuf>,
    /// What the scan before left out.
    before: HashSet<PathBuf>,
    store_dir: PathBuf,
}

impl Scan {
    /// The paths `git add` must leave out: files over the limit and nested
    /// repositories.
    pub(crate) fn left_out(&self) -> impl Iterator<Item = &Path> {
        self.left_out.iter().map(PathBuf::as_path)
    }

    /// The paths left out now that the scan before kept: if the store's
    /// index still holds them (a file that grew, a directory that became a
    /// repository), they come out of it.
    pub(crate) fn newly_left_out(&self) -> Vec<&Path> {
        let mut out: Vec<_> = self
            .left_out
            .iter()
            .filter(|p| !self.before.contains(*p))
            .map(PathBuf::as_path)
            .collect();
        out.sort();
        out
    }

    /// Whether `path` is left out of `git add`.
    pub(crate) fn is_left_out(&self, path: &Path) -> bool {
        self.left_out.contains(path)
    }

    /// Records a file found over the limit after the scan (a kept file
    /// that grew in place, which changes no directory).
    pub(crate) fn add_large(&mut self, path: PathBuf, size: u64) {
        if !self.left_out.insert(path.clone()) {
            return;
        }
        let parent = path.parent().unwrap_or(Path::new("")).to_owned();
        if let (Some(dir), Some(name)) = (self.memory.dirs.get_mut(&parent), path.file_name()) {
            dir.large.push(name.to_owned());
        }
        self.not_kept.push(NotKept {
            path,
            reason: NotKeptReason::TooLarge(size),
        });
        self.not_kept.sort_by(|a, b| a.path.cmp(&b.path));
    }

    /// The tree the store's index at `index` holds, if known without
    /// asking git: nobody wrote the file since the last snapshot noted it.
    pub(crate) fn tree_of_index(&self, index: &Path) -> Option<&str> {
        let (tree, sig) = self.memory.index.as_ref()?;
        (Sig::at(index)? == *sig).then_some(tree.as_str())
    }

    /// Notes that the index at `index` now holds `tree`.
    pub(crate) fn set_tree(&mut self, tree: &str, index: &Path) {
        self.memory.index = Sig::at(index).map(|sig| (tree.to_owned(), sig));
    }

    /// The paths at which the index's tree differs from `tree`, if known.
    pub(crate) fn changes_from(&self, tree: &str) -> Option<&[PathBuf]> {
        match &self.memory.base {
            Some((base, paths)) if base == tree => Some(paths),
            _ => None,
        }
    }

    /// Notes that the index's tree is `tree` itself: what changes next is
    /// what differs from it.
    pub(crate) fn set_base(&mut self, tree: &str) {
        self.memory.base = Some((tree.to_owned(), Vec::new()));
    }

    /// Notes that the index's tree changed at `changed` (`None`: not known
    /// where), from the tree it held when the base was last known. A path
    /// changed twice may be back as the base has it: the base is dropped
    /// then, and git asked.
    pub(crate) fn base_changed(&mut self, known_before: bool, changed: Option<&[PathBuf]>) {
        self.memory.base = match (self.memory.base.take(), changed) {
            (Some((base, mut paths)), Some(changed)) if known_before => {
                let before: HashSet<&PathBuf> = paths.iter().collect();
                if changed.iter().any(|p| before.contains(p)) {
                    None
                } else {
                    paths.extend(changed.iter().cloned());
                    paths.sort();
                    Some((base, paths))
                }
            }
            _ => None,
        };
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
/// the excludes files git reads beside the `.gitignore` files, the one
/// whose rules win first (`info/exclude`, then `core.excludesFile`).
pub(crate) fn scan(
    workspace: &Path,
    store_dir: &Path,
    limit: u64,
    exclude_files: &[PathBuf],
) -> Scan {
    let started = now_ns();
    let old = load(&store_dir.join(FILE))
        .filter(|m| m.limit == limit)
        .unwrap_or_default();
    let before: HashSet<PathBuf> = old.left_out().collect();
    let mut excludes = HashMap::new();
    let mut base = GitignoreBuilder::new(workspace);
    // Within one set of rules the last added wins.
    for file in exclude_files.iter().rev() {
        if let Some(sig) = Sig::at(file) {
            excludes.insert(file.clone(), sig);
            // A file git cannot read either: its rules apply to neither.
            let _ = base.add(file);
        }
    }
    let base = base.build().unwrap_or_else(|_| Gitignore::empty());
    let mut walk = Walk {
        workspace,
        store_dir,
        limit,
        old: &old,
        everywhere: excludes != old.excludes,
        base: &base,
        stack: Vec::new(),
        memory: Memory::default(),
        not_kept: Vec::new(),
        ignores_changed: false,
    };
    walk.visit(PathBuf::new());
    if walk.ignores_changed && !walk.everywhere {
        // An ignore file changed: what it no longer hides may be large in a
        // directory that did not change.
        walk.everywhere = true;
        walk.memory = Memory::default();
        walk.not_kept.clear();
        walk.visit(PathBuf::new());
    }
    let Walk {
        mut memory,
        mut not_kept,
        ..
    } = walk;
    memory.limit = limit;
    memory.scanned_at = started;
    memory.excludes = excludes;
    memory.index = old.index;
    memory.base = old.base;
    not_kept.sort_by(|a, b| a.path.cmp(&b.path));
    Scan {
        not_kept,
        left_out: memory.left_out().collect(),
        memory,
        before,
        store_dir: store_dir.to_owned(),
    }
}

/// One walk of the workspace, directory by directory.
struct Walk<'a> {
    workspace: &'a Path,
    store_dir: &'a Path,
    limit: u64,
    old: &'a Memory,
    /// List every directory, changed or not.
    everywhere: bool,
    /// `info/exclude` and `core.excludesFile`.
    base: &'a Gitignore,
    /// The `.gitignore` rules of the directories above the current one.
    stack: Vec<Gitignore>,
    memory: Memory,
    not_kept: Vec<NotKept>,
    ignores_changed: bool,
}

impl Walk<'_> {
    fn visit(&mut self, rel: PathBuf) {
        let abs = self.workspace.join(&rel);
        let Ok(meta) = std::fs::symlink_metadata(&abs) else {
            return;
        };
        if !meta.is_dir() {
            return;
        }
        let sig = Sig::of(&meta);
        let gitignore = Sig::at(&abs.join(".gitignore"));
        let before: &Memory = self.old;
        let old = before.dirs.get(&rel);
        if old.is_some_and(|o| o.gitignore != gitignore) {
            self.ignores_changed = true;
        }
        let fresh = !self.everywhere
            && old.is_some_and(|o| o.sig == Some(sig) && sig.mtime + RACY_NS < before.scanned_at);
        let pushed = gitignore.is_some();
        if pushed {
            let mut rules = GitignoreBuilder::new(&abs);
            let _ = rules.add(abs.join(".gitignore"));
            self.stack
                .push(rules.build().unwrap_or_else(|_| Gitignore::empty()));
        }
        let mut dir = match (fresh, old) {
            (true, Some(old)) => self.as_before(&rel, old),
            _ => self.list(&rel, &abs),
        };
        dir.sig = Some(sig);
        dir.gitignore = gitignore;
        self.report(&rel, &dir);
        let subdirs = if dir.nested {
            Vec::new()
        } else {
            dir.subdirs.clone()
        };
        self.memory.dirs.insert(rel.clone(), dir);
        for name in subdirs {
            self.visit(rel.join(name));
        }
        if pushed {
            self.stack.pop();
        }
    }

    /// An unchanged directory: what it held, its large files' sizes read
    /// again (a file grows without changing its directory).
    fn as_before(&self, rel: &Path, old: &Dir) -> Dir {
        let mut dir = old.clone();
        dir.large.retain(|name| {
            std::fs::symlink_metadata(self.workspace.join(rel).join(name))
                .is_ok_and(|m| m.is_file() && m.len() > self.limit)
        });
        dir
    }

    /// A changed directory, listed.
    fn list(&self, rel: &Path, abs: &Path) -> Dir {
        let mut dir = Dir::default();
        let Ok(entries) = std::fs::read_dir(abs) else {
            return dir;
        };
        let entries: Vec<_> = entries.flatten().collect();
        if !rel.as_os_str().is_empty() && entries.iter().any(|e| e.file_name() == ".git") {
            // Git sees a repository of its own there: not ours.
            dir.nested = true;
            return dir;
        }
        for entry in entries {
            let name = entry.file_name();
            let path = abs.join(&name);
            if name == ".git" || path == self.store_dir {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                // Kept as a link by git; never followed.
                continue;
            }
            if self.ignored(&path, kind.is_dir()) {
                continue;
            }
            if kind.is_dir() {
                dir.subdirs.push(name);
            } else if kind.is_file() {
                if std::fs::symlink_metadata(&path).is_ok_and(|m| m.len() > self.limit) {
                    dir.large.push(name);
                }
            } else if kind.is_fifo()
                || kind.is_socket()
                || kind.is_block_device()
                || kind.is_char_device()
            {
                dir.special.push(name);
            }
        }
        dir
    }

    /// Whether git ignores `path`: the deepest `.gitignore` with a rule for
    /// it decides, then `info/exclude`, then `core.excludesFile`.
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for rules in self.stack.iter().rev().chain(std::iter::once(self.base)) {
            match rules.matched(path, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        false
    }

    /// What `dir` (at `rel`) holds that is not kept.
    fn report(&mut self, rel: &Path, dir: &Dir) {
        let mut push = |path: PathBuf, reason| self.not_kept.push(NotKept { path, reason });
        if dir.nested {
            push(rel.to_owned(), NotKeptReason::NestedRepository);
        }
        for name in &dir.special {
            push(rel.join(name), NotKeptReason::Special);
        }
        for name in &dir.large {
            let path = rel.join(name);
            let size = std::fs::symlink_metadata(self.workspace.join(&path)).map_or(0, |m| m.len());
            push(path, NotKeptReason::TooLarge(size));
        }
    }
}

/// Now, in ns since the epoch: a scan's start, which the next compares
/// directories' mtimes with (a directory changed during the scan is
/// within `RACY_NS` of it, so listed again).
fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// `memory` as bytes: a header line, then NUL-terminated records (paths
/// are bytes, any but NUL; a directory's names follow its record).
fn encode(memory: &Memory) -> Vec<u8> {
    let mut out = format!("{HEADER} {} {}\n", memory.limit, memory.scanned_at).into_bytes();
    let sig = |s: Option<&Sig>| match s {
        Some(s) => format!("{} {} {}", s.mtime, s.ctime, s.ino),
        None => "- - -".to_owned(),
    };
    let mut record = |head: String, path: &[u8]| {
        out.extend_from_slice(head.as_bytes());
        out.push(b' ');
        out.extend_from_slice(path);
        out.push(0);
    };
    for (path, dir) in &memory.dirs {
        let head = format!(
            "D {} {} {}",
            sig(dir.sig.as_ref()),
            sig(dir.gitignore.as_ref()),
            u8::from(dir.nested)
        );
        record(head, path.as_os_str().as_bytes());
        for (kind, names) in [("s", &dir.subdirs), ("f", &dir.special), ("l", &dir.large)] {
            for name in names {
                record(kind.to_owned(), name.as_bytes());
            }
        }
    }
    for (path, s) in &memory.excludes {
        record(format!("X {}", sig(Some(s))), path.as_os_str().as_bytes());
    }
    if let Some((tree, s)) = &memory.index {
        record(format!("T {}", sig(Some(s))), tree.as_bytes());
    }
    if let Some((tree, paths)) = &memory.base {
        record("B".to_owned(), tree.as_bytes());
        for path in paths {
            record("b".to_owned(), path.as_os_str().as_bytes());
        }
    }
    out
}

/// What `encode` wrote at `path`, if it is that.
fn load(path: &Path) -> Option<Memory> {
    let bytes = std::fs::read(path).ok()?;
    let newline = bytes.iter().position(|b| *b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..newline]).ok()?;
    let mut words = header.strip_prefix(HEADER)?.split_whitespace();
    let mut memory = Memory {
        limit: words.next()?.parse().ok()?,
        scanned_at: words.next()?.parse().ok()?,
        ..Memory::default()
    };
    let mut current: Option<PathBuf> = None;
    for record in bytes[newline + 1..].split(|b| *b == 0) {
        if record.is_empty() {
            continue;
        }
        let fields: Vec<&[u8]> = record.splitn(2, |b| *b == b' ').collect();
        let [kind, rest] = fields[..] else {
            return None;
        };
        match kind {
            b"D" => {
                let parts: Vec<&[u8]> = rest.splitn(8, |b| *b == b' ').collect();
                let [m, c, i, gm, gc, gi, nested, path] = parts[..] else {
                    return None;
                };
                let path = PathBuf::from(OsString::from_vec(path.to_vec()));
                let dir = Dir {
                    sig: Some(parse_sig(m, c, i)?),
                    gitignore: parse_sig(gm, gc, gi),
                    nested: nested == b"1",
                    ..Dir::default()
                };
                memory.dirs.insert(path.clone(), dir);
                current = Some(path);
            }
            b"s" | b"f" | b"l" => {
                let dir = memory.dirs.get_mut(current.as_ref()?)?;
                let name = OsString::from_vec(rest.to_vec());
                match kind {
                    b"s" => dir.subdirs.push(name),
                    b"f" => dir.special.push(name),
                    _ => dir.large.push(name),
                }
            }
            b"B" => memory.base = Some((String::from_utf8(rest.to_vec()).ok()?, Vec::new())),
            b"b" => memory
                .base
                .as_mut()?
                .1
                .push(PathBuf::from(OsString::from_vec(rest.to_vec()))),
            b"X" | b"T" => {
                let parts: Vec<&[u8]> = rest.splitn(4, |b| *b == b' ').collect();
                let [m, c, i, value] = parts[..] else {
                    return None;
                };
                let sig = parse_sig(m, c, i)?;
                if kind == b"X" {
                    let path = PathBuf::from(OsString::from_vec(value.to_vec()));
                    memory.excludes.insert(path, sig);
                } else {
                    memory.index = Some((String::from_utf8(value.to_vec()).ok()?, sig));
                }
            }
            _ => return None,
        }
    }
    Some(memory)
}

fn parse_sig(m: &[u8], c: &[u8], i: &[u8]) -> Option<Sig> {
    let number = |b: &[u8]| std::str::from_utf8(b).ok()?.parse::<i128>().ok();
    Some(Sig {
        mtime: number(m)?,
        ctime: number(c)?,
        ino: u64::try_from(number(i)?).ok()?,
    })
}

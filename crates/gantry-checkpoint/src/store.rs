//! `CheckpointStore`: one workspace's checkpoints in a private bare git
//! repository, and the index the store keeps of it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::CheckpointError;
use crate::fork::{self, Fork};
use crate::git::{self, Git, nul_split};
use crate::journal;
use crate::not_kept::NotKept;
use crate::objects;
use crate::scan;

/// Files larger than this are not kept (10 MiB): a checkpoint is for the
/// files an agent edits, not build outputs or data sets.
pub const DEFAULT_SIZE_LIMIT: u64 = 10 * 1024 * 1024;

/// The ref naming the checkpoint the workspace last came from: the parent
/// of the next one.
const LATEST: &str = "refs/gantry/latest";
/// The ref naming the tree the agent last left the workspace in: what a
/// rewind compares the workspace with to find others' changes.
const LEFT: &str = "refs/gantry/left";

/// Beside `LATEST`, which tree its commit holds (`commit tree`): believed
/// only while the ref still names that commit.
const LATEST_NOTE: &str = "gantry-latest";

/// The checkpoint the workspace last came from, and its tree.
struct Latest {
    commit: String,
    tree: String,
}

/// A checkpoint's id: the commit holding its tree, in hex.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CheckpointId(String);

impl CheckpointId {
    /// `text` as an id, if it is one (40 or 64 hex digits), so no caller's
    /// string reaches `git` as an option or a revision expression.
    pub fn parse(text: &str) -> Option<Self> {
        let hex = text.bytes().all(|b| b.is_ascii_hexdigit());
        (hex && matches!(text.len(), 40 | 64)).then(|| Self(text.to_ascii_lowercase()))
    }

    /// The id in hex.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for CheckpointId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One recorded checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Its id.
    pub id: CheckpointId,
    /// Paths changed since the checkpoint before it (every path kept, for
    /// the first).
    pub files_changed: Vec<PathBuf>,
    /// Paths of the workspace it does not hold, and why.
    pub not_kept: Vec<NotKept>,
}

/// One workspace's checkpoints. Calls on one store must not overlap (the
/// engine makes them from the thread's actor, one at a time).
#[derive(Debug)]
pub struct CheckpointStore {
    git: Git,
    size_limit: u64,
}

/// Names each export's scratch index apart from concurrent ones.
static EXPORTS: AtomicU64 = AtomicU64::new(0);

/// The workspace as it is now, added to the store's index.
struct Snapshot {
    tree: String,
    /// What the scan saw, to keep once the caller is done with the index.
    scan: scan::Scan,
}

impl CheckpointStore {
    /// The store at `store_dir` (a bare repository, made if missing) for
    /// the workspace at `workspace`.
    pub fn open(store_dir: &Path, workspace: &Path) -> Result<Self, CheckpointError> {
        if !store_dir.join("HEAD").is_file() {
            std::fs::create_dir_all(store_dir).map_err(|source| CheckpointError::Io {
                path: store_dir.to_owned(),
                source,
            })?;
            let output = git::isolated()
                .args(["init", "--bare", "-q"])
                .arg(store_dir)
                .output()
                .map_err(CheckpointError::GitMissing)?;
            if !output.status.success() {
                return Err(CheckpointError::Git {
                    args: "init --bare".into(),
                    stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
                });
            }
        }
        Ok(Self {
            git: Git {
                git_dir: store_dir.to_owned(),
                work_tree: workspace.to_owned(),
                index: store_dir.join("gantry-index"),
                excludes_file: git::user_excludes_file(),
            },
            size_limit: DEFAULT_SIZE_LIMIT,
        })
    }

    /// The same store keeping files up to `limit` bytes.
    pub fn with_size_limit(mut self, limit: u64) -> Self {
        self.size_limit = limit;
        self
    }

    /// Records the workspace as it is now, described by `message`, as a
    /// checkpoint following the one it last came from.
    pub fn record(&self, message: &str) -> Result<Checkpoint, CheckpointError> {
        let parent = self.latest()?;
        let mut snapshot = self.snapshot()?;
        let files_changed = match &parent {
            // Nothing changed: no diff to run.
            Some(parent) if parent.tree == snapshot.tree => Vec::new(),
            Some(parent) => match snapshot.scan.changes_from(&parent.tree) {
                // What git said it changed since the index held it.
                Some(paths) => paths.to_vec(),
                None => self.changed(&parent.tree, &snapshot.tree)?,
            },
            None => {
                let out = self
                    .git
                    .run(["ls-tree", "-r", "-z", "--name-only", &snapshot.tree])?;
                nul_split(&out).map(Path::to_owned).collect()
            }
        };
        let parent_commit = parent.as_ref().map(|p| p.commit.as_str());
        let written =
            objects::write_commit(&self.git.git_dir, &snapshot.tree, parent_commit, message)?;
        let commit = match written {
            Some(commit) => commit,
            None => {
                let mut args = vec!["commit-tree".to_owned(), snapshot.tree.clone()];
                if let Some(parent) = parent_commit {
                    args.extend(["-p".to_owned(), parent.to_owned()]);
                }
                args.extend(["-m".to_owned(), message.to_owned()]);
                self.git.line(&args)?
            }
        };
        // The checkpoint's own ref first: LATEST never names a commit no
        // ref keeps.
        objects::write_ref(
            &self.git.git_dir,
            &format!("refs/checkpoints/{commit}"),
            &commit,
        )?;
        objects::write_ref(&self.git.git_dir, LATEST, &commit)?;
        self.note_latest(&commit, &snapshot.tree);
        snapshot.scan.set_base(&snapshot.tree);
        snapshot.keep();
        Ok(Checkpoint {
            id: CheckpointId(commit),
            files_changed,
            not_kept: snapshot.scan.not_kept,
        })
    }

    /// Remembers the workspace as it is now as the state the agent left it
    /// in (at a turn's end), so a later rewind can tell others' changes.
    pub fn mark_left(&self) -> Result<(), CheckpointError> {
        let snapshot = self.snapshot()?;
        snapshot.keep();
        objects::write_ref(&self.git.git_dir, LEFT, &snapshot.tree)
    }

    /// The paths changed since the agent last left the workspace (or since
    /// the latest checkpoint, if it never did): someone else's changes,
    /// which a rewind would lose.
    pub fn changed_by_others(&self) -> Result<Vec<PathBuf>, CheckpointError> {
        let base = match self.resolve(LEFT)? {
            Some(tree) => tree,
            None => match self.resolve(LATEST)? {
                Some(commit) => format!("{commit}^{{tree}}"),
                None => return Ok(Vec::new()),
            },
        };
        let now = self.snapshot()?;
        now.keep();
        self.changed(&base, &now.tree)
    }

    /// Puts the workspace back as it was at checkpoint `id`: files created
    /// since removed, deleted ones restored, changed ones rewritten;
    /// ignored and not-kept files untouched. Running it again after a
    /// crash part way finishes it. Returns the paths it changed.
    pub fn restore(&self, id: &CheckpointId) -> Result<Vec<PathBuf>, CheckpointError> {
        self.known(id)?;
        // Said before any file is touched, and unsaid once all are: a
        // crash in between leaves this behind for `finish_interrupted`.
        journal::begin(&self.git.git_dir, id, &self.git.work_tree)?;
        let mut now = self.snapshot()?;
        let target = format!("{id}^{{tree}}");
        let changed = self.changed(&now.tree, &target)?;
        // A two-tree merge from the index (just made equal to the
        // workspace) to the checkpoint: git's own branch switch, which
        // removes, writes and chmods only what differs.
        self.git
            .run(["read-tree", "-m", "-u", &now.tree, id.as_str()])?;
        let tree = self.git.line(["rev-parse", &target])?;
        let refs = format!("update {LATEST} {id}\nupdate {LEFT} {tree}\n");
        self.git
            .run_with(["update-ref", "--stdin"], Some(refs.as_bytes()))?;
        self.note_latest(id.as_str(), &tree);
        // The index holds the checkpoint's tree now.
        now.scan.set_tree(&tree, &self.git.index);
        now.scan.set_base(&tree);
        now.keep();
        journal::end(&self.git.git_dir)?;
        Ok(changed)
    }

    /// A new store at `store_dir` for the same workspace, carrying on from
    /// this one where it stands (a rewound thread's continuation): it
    /// borrows this store's objects (git alternates), starts from its index
    /// (so unchanged files are not hashed again) and from its latest
    /// checkpoint and the state the agent left.
    pub fn continue_into(&self, store_dir: &Path) -> Result<CheckpointStore, CheckpointError> {
        let next = Self::open(store_dir, &self.git.work_tree)?;
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| CheckpointError::Io { path, source }
        };
        let alternates = store_dir.join("objects/info/alternates");
        let objects = self.git.git_dir.join("objects");
        std::fs::write(&alternates, format!("{}\n", objects.display())).map_err(io(&alternates))?;
        if self.git.index.is_file() {
            std::fs::copy(&self.git.index, &next.git.index).map_err(io(&next.git.index))?;
        }
        // What the scan saw and which tree is latest hold for the same
        // workspace; the copied index is a new file, so its tree is asked
        // of git once.
        for cache in [scan::FILE, LATEST_NOTE] {
            let _ = std::fs::copy(self.git.git_dir.join(cache), store_dir.join(cache));
        }
        let mut refs = String::new();
        for name in [LATEST, LEFT] {
            if let Some(id) = self.resolve(name)? {
                refs.push_str(&format!("update {name} {id}\n"));
            }
        }
        next.git
            .run_with(["update-ref", "--stdin"], Some(refs.as_bytes()))?;
        Ok(next.with_size_limit(self.size_limit))
    }

    /// Finishes a restore a crash cut short in the store at `store_dir`,
    /// if one was: the workspace it named is put back at its checkpoint.
    /// Returns the checkpoint it finished.
    pub fn finish_interrupted(store_dir: &Path) -> Result<Option<CheckpointId>, CheckpointError> {
        let Some((id, workspace)) = journal::read(store_dir)? else {
            return Ok(None);
        };
        // The killed git's lock on the store's own index: nobody else
        // holds it (the store's calls never overlap).
        let _ = std::fs::remove_file(store_dir.join("gantry-index.lock"));
        let store = Self::open(store_dir, &workspace)?;
        store.restore(&id)?;
        Ok(Some(id))
    }

    /// A fork of the workspace at checkpoint `id`: a new directory beside
    /// it holding the checkpoint's files, a worktree of the user's
    /// repository on a branch of its own where the workspace is one (see
    /// [`Fork`]). A path already at the fork's name is never followed or
    /// written: the next name is taken.
    pub fn fork(&self, id: &CheckpointId) -> Result<Fork, CheckpointError> {
        self.known(id)?;
        let (dir, suffix) = fork::claim(&self.git.work_tree, id)?;
        let claimed = fork::Claimed::new(&dir)?;
        let branch = fork::worktree(&self.git.work_tree, &dir, &suffix)?;
        claimed.check()?;
        self.export(id, &dir)?;
        claimed.check()?;
        Ok(Fork { dir, branch })
    }

    /// Writes checkpoint `id`'s files into `dest` (made if missing), as a
    /// fork's new workspace.
    pub fn export(&self, id: &CheckpointId, dest: &Path) -> Result<(), CheckpointError> {
        self.known(id)?;
        std::fs::create_dir_all(dest).map_err(|source| CheckpointError::Io {
            path: dest.to_owned(),
            source,
        })?;
        let n = EXPORTS.fetch_add(1, Ordering::Relaxed);
        let index = self
            .git
            .git_dir
            .join(format!("export-{}-{n}.index", std::process::id()));
        let git = Git {
            work_tree: dest.to_owned(),
            index: index.clone(),
            ..self.git.clone()
        };
        let result = git
            .run(["read-tree", id.as_str()])
            .and_then(|_| git.run(["checkout-index", "-a", "-f"]));
        // The scratch index is the store's own; the export is done with it.
        let _ = std::fs::remove_file(&index);
        result.map(|_| ())
    }

    /// The workspace's files added to the store's index, and the tree.
    fn snapshot(&self) -> Result<Snapshot, CheckpointError> {
        let exclude_files = self.sync_excludes()?;
        let mut scan = scan::scan(
            &self.git.work_tree,
            &self.git.git_dir,
            self.size_limit,
            &exclude_files,
        );
        // Read before anything writes the index: while it is as the last
        // snapshot left it, so is its tree.
        let from = scan.tree_of_index(&self.git.index).map(str::to_owned);
        let mut changed = Some(Vec::new());
        let newly: Vec<PathBuf> = scan
            .newly_left_out()
            .into_iter()
            .map(Path::to_owned)
            .collect();
        if !newly.is_empty() {
            // Kept before (a file since grown, a directory since made a
            // repository): out of the index, not kept as its old self.
            let removed = self.unstage(&newly)?;
            merge(&mut changed, removed);
        }
        let mut pathspecs = b".\0".to_vec();
        for path in scan.left_out() {
            pathspecs.extend_from_slice(b":(exclude,literal)");
            pathspecs.extend_from_slice(path.as_os_str().as_encoded_bytes());
            pathspecs.push(0);
        }
        // One pass over the workspace: git's own stat cache (the index)
        // tells it which files to hash, and `-v` names what it changed.
        let said = self.git.run_with(
            [
                "add",
                "-A",
                "-v",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ],
            Some(&pathspecs),
        )?;
        merge(&mut changed, said_paths(&said));
        let mut tree = match (&from, &changed) {
            (Some(tree), Some(changed)) if changed.is_empty() => tree.clone(),
            // Objects were just written by `add`: no need to check each.
            _ => self.git.line(["write-tree", "--missing-ok"])?,
        };
        // A file kept before and grown past the limit in place (which
        // changes no directory, so the scan did not read its size). A path
        // crafted to read as two of git's lines hides its growth here (it
        // is kept, large), not its content.
        let candidates = match (&changed, &from) {
            (Some(changed), _) => changed.clone(),
            (None, Some(before)) => self.changed(before, &tree)?,
            // No earlier tree: the scan read every size.
            (None, None) => Vec::new(),
        };
        let mut grown = Vec::new();
        for path in candidates {
            if scan.is_left_out(&path) {
                continue;
            }
            if let Ok(meta) = std::fs::symlink_metadata(self.git.work_tree.join(&path))
                && meta.is_file()
                && meta.len() > self.size_limit
            {
                grown.push((path, meta.len()));
            }
        }
        if !grown.is_empty() {
            let paths: Vec<PathBuf> = grown.iter().map(|(p, _)| p.clone()).collect();
            let removed = self.unstage(&paths)?;
            merge(&mut changed, removed);
            for (path, size) in grown {
                scan.add_large(path, size);
            }
            tree = self.git.line(["write-tree", "--missing-ok"])?;
        }
        if let Some(changed) = &mut changed {
            changed.sort();
            changed.dedup();
        }
        scan.base_changed(from.is_some(), changed.as_deref());
        scan.set_tree(&tree, &self.git.index);
        Ok(Snapshot { tree, scan })
    }

    /// Takes `paths` (and what is under them) out of the store's index;
    /// returns the paths git says it took out.
    fn unstage(&self, paths: &[PathBuf]) -> Result<Option<Vec<PathBuf>>, CheckpointError> {
        let specs: Vec<u8> = paths
            .iter()
            .flat_map(|path| {
                let mut spec = b":(literal)".to_vec();
                spec.extend_from_slice(path.as_os_str().as_encoded_bytes());
                spec.push(0);
                spec
            })
            .collect();
        let said = self.git.run_with(
            [
                "rm",
                "--cached",
                "-r",
                "-f",
                "--ignore-unmatch",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ],
            Some(&specs),
        )?;
        Ok(said_paths(&said))
    }

    /// Copies the user's `.git/info/exclude` into the store's, which is
    /// the one git reads with a private git dir. Returns the excludes
    /// files git reads beside the `.gitignore` files.
    fn sync_excludes(&self) -> Result<Vec<PathBuf>, CheckpointError> {
        let theirs = self.git.work_tree.join(".git/info/exclude");
        let mut wanted = std::fs::read(&theirs).unwrap_or_default();
        // A store kept inside its own workspace never records itself.
        if let Ok(inside) = self.git.git_dir.strip_prefix(&self.git.work_tree) {
            wanted.extend_from_slice(b"\n/");
            wanted.extend_from_slice(inside.as_os_str().as_encoded_bytes());
            wanted.extend_from_slice(b"/\n");
        }
        let ours = self.git.git_dir.join("info/exclude");
        let mut files = vec![ours.clone()];
        files.extend(self.git.excludes_file.clone());
        if std::fs::read(&ours).ok().as_deref() == Some(wanted.as_slice()) {
            return Ok(files);
        }
        let io = |source| CheckpointError::Io {
            path: ours.clone(),
            source,
        };
        std::fs::create_dir_all(self.git.git_dir.join("info")).map_err(io)?;
        std::fs::write(&ours, &wanted).map_err(io)?;
        Ok(files)
    }

    /// The paths that differ between two trees.
    fn changed(&self, from: &str, to: &str) -> Result<Vec<PathBuf>, CheckpointError> {
        let out = self.git.run([
            "diff-tree",
            "-r",
            "-z",
            "--name-only",
            "--no-renames",
            from,
            to,
        ])?;
        Ok(nul_split(&out).map(Path::to_owned).collect())
    }

    /// The latest checkpoint and its tree, if any: from the ref's file and
    /// the note beside it when they agree, from git otherwise.
    fn latest(&self) -> Result<Option<Latest>, CheckpointError> {
        let commit = match objects::read_ref(&self.git.git_dir, LATEST) {
            Some(commit) => commit,
            // Packed, or none yet.
            None => match self.resolve(LATEST)? {
                Some(commit) => commit,
                None => return Ok(None),
            },
        };
        let note = std::fs::read_to_string(self.git.git_dir.join(LATEST_NOTE)).unwrap_or_default();
        if let Some((noted, tree)) = note.trim().split_once(' ')
            && noted == commit
            && CheckpointId::parse(tree).is_some()
        {
            let tree = tree.to_owned();
            return Ok(Some(Latest { commit, tree }));
        }
        let tree = self
            .git
            .line(["rev-parse", &format!("{commit}^{{tree}}")])?;
        Ok(Some(Latest { commit, tree }))
    }

    /// Notes which tree the latest checkpoint `commit` holds. Only a
    /// cache: a note that cannot be written is asked of git next time.
    fn note_latest(&self, commit: &str, tree: &str) {
        let path = self.git.git_dir.join(LATEST_NOTE);
        let tmp = self.git.git_dir.join(format!("{LATEST_NOTE}.tmp"));
        let written = std::fs::write(&tmp, format!("{commit} {tree}\n"))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if written.is_err() {
            let _ = std::fs::remove_file(&path);
        }
    }

    /// What `reference` names, if it exists.
    fn resolve(&self, reference: &str) -> Result<Option<String>, CheckpointError> {
        match self.git.line(["rev-parse", "--verify", "-q", reference]) {
            Ok(id) => Ok(Some(id)),
            Err(CheckpointError::Git { .. }) => Ok(None),
            Err(other) => Err(other),
        }
    }

    /// Fails unless `id` is a checkpoint of this store.
    fn known(&self, id: &CheckpointId) -> Result<(), CheckpointError> {
        match self.resolve(&format!("refs/checkpoints/{id}"))? {
            Some(_) => Ok(()),
            None => Err(CheckpointError::Unknown(id.to_string())),
        }
    }
}

/// The paths `git add -v` says it added or removed (`add 'x'`, `remove
/// 'x'`) or `git rm` took out (`rm 'x'`), or `None` when a line is not one
/// of those (a path holding a newline): then git is asked.
fn said_paths(said: &[u8]) -> Option<Vec<PathBuf>> {
    use std::os::unix::ffi::OsStrExt;
    let mut paths = Vec::new();
    for line in said.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let quoted = line
            .strip_prefix(b"add '")
            .or_else(|| line.strip_prefix(b"remove '"))
            .or_else(|| line.strip_prefix(b"rm '"))?;
        let path = quoted.strip_suffix(b"'")?;
        paths.push(PathBuf::from(std::ffi::OsStr::from_bytes(path)));
    }
    Some(paths)
}

impl Snapshot {
    /// Keeps what the scan saw for the next snapshot. Only a cache: one
    /// not kept makes the next scan list every directory.
    fn keep(&self) {
        let _ = self.scan.save();
    }
}

/// Adds `more` to `changed`; either unknown makes it unknown.
fn merge(changed: &mut Option<Vec<PathBuf>>, more: Option<Vec<PathBuf>>) {
    match (changed.as_mut(), more) {
        (Some(changed), Some(more)) => changed.extend(more),
        _ => *changed = None,
    }
}

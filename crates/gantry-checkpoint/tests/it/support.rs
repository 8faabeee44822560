//! A workspace and its store in a temp dir, and what a tree holds.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use gantry_checkpoint::CheckpointStore;

/// A workspace beside a data dir holding its store.
pub(crate) struct Scratch {
    _dir: tempfile::TempDir,
    pub(crate) ws: PathBuf,
    pub(crate) store_dir: PathBuf,
}

impl Scratch {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).expect("workspace");
        let store_dir = dir.path().join("data/checkpoints/t.git");
        Self {
            ws,
            store_dir,
            _dir: dir,
        }
    }

    pub(crate) fn store(&self) -> CheckpointStore {
        CheckpointStore::open(&self.store_dir, &self.ws).expect("store")
    }

    pub(crate) fn write(&self, path: &str, body: impl AsRef<[u8]>) {
        let path = self.ws.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("dir");
        }
        std::fs::write(path, body).expect("write");
    }

    /// Runs `git args` in the workspace as the user would.
    pub(crate) fn user_git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=u", "-c", "user.email=u@x"])
            .args(args)
            .current_dir(&self.ws)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// What one path of a tree is.
#[derive(Debug, PartialEq, Eq, Clone)]
pub(crate) enum Entry {
    Dir,
    File { bytes: Vec<u8>, executable: bool },
    Link(PathBuf),
}

/// Every path under `root` but `.git`, byte for byte, with modes and links.
pub(crate) fn tree(root: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Entry>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let entry = entry.expect("entry");
        let path = entry.path();
        if entry.file_name() == ".git" {
            continue;
        }
        let rel = path.strip_prefix(root).expect("under root").to_owned();
        let meta = std::fs::symlink_metadata(&path).expect("lstat");
        if meta.file_type().is_symlink() {
            out.insert(rel, Entry::Link(std::fs::read_link(&path).expect("link")));
        } else if meta.is_dir() {
            out.insert(rel, Entry::Dir);
            walk(root, &path, out);
        } else if meta.is_file() {
            let executable = meta.permissions().mode() & 0o111 != 0;
            let bytes = std::fs::read(&path).expect("read");
            out.insert(rel, Entry::File { bytes, executable });
        }
    }
}

pub(crate) fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

//! A fork's directory: beside the workspace, claimed before anything is
//! written into it, and, where the workspace is a git repository, a
//! worktree of it on a branch of its own, so the user can review what the
//! fork changes and merge it.
//!
//! The name is claimed with one `mkdir`, which follows nothing: a path
//! already there (a symlink the agent planted pointing elsewhere
//! included) is left as it is, and the next name is taken. The user's
//! repository gains the worktree's entry and its branch, nothing else:
//! no checkout runs in it (the checkpoint's files come from the store),
//! no hook, no filter, no fsmonitor.

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::git::isolated;
use crate::{CheckpointError, CheckpointId};

/// How many names a fork tries beside the workspace before giving up.
const NAMES: usize = 20;

/// A fork's new directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fork {
    /// The directory, beside the workspace.
    pub dir: PathBuf,
    /// The branch its worktree is on, where the workspace is a git
    /// repository (`gantry/fork-<id prefix>`); `None` for a plain copy.
    pub branch: Option<String>,
}

/// A new, empty directory beside `workspace` named after `id`
/// (`<workspace>-fork-<id prefix>`, then `-2`, `-3`, ...), made by this
/// call, and the name's suffix after the workspace's.
pub(crate) fn claim(
    workspace: &Path,
    id: &CheckpointId,
) -> Result<(PathBuf, String), CheckpointError> {
    let name = workspace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "workspace".to_owned());
    let parent = workspace.parent().unwrap_or(Path::new("/"));
    let prefix = &id.as_str()[..12];
    for n in 1..=NAMES {
        let suffix = match n {
            1 => format!("fork-{prefix}"),
            n => format!("fork-{prefix}-{n}"),
        };
        let dir = parent.join(format!("{name}-{suffix}"));
        // `mkdir` fails on anything already there, a dangling or planted
        // symlink included, and never writes through one.
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok((dir, suffix)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(CheckpointError::Io { path: dir, source }),
        }
    }
    Err(CheckpointError::Io {
        path: parent.join(format!("{name}-fork-{prefix}")),
        source: std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{NAMES} fork directories of this checkpoint already exist"),
        ),
    })
}

/// The directory `dir` as made by [`claim`]: still a directory (not a
/// symlink swapped in since), the same one.
pub(crate) struct Claimed {
    dir: PathBuf,
    dev: u64,
    ino: u64,
}

impl Claimed {
    pub(crate) fn new(dir: &Path) -> Result<Self, CheckpointError> {
        let meta = std::fs::symlink_metadata(dir).map_err(|source| CheckpointError::Io {
            path: dir.to_owned(),
            source,
        })?;
        Ok(Self {
            dir: dir.to_owned(),
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }

    /// Fails unless the directory is still the one claimed.
    pub(crate) fn check(&self) -> Result<(), CheckpointError> {
        let same = std::fs::symlink_metadata(&self.dir).is_ok_and(|meta| {
            meta.file_type().is_dir() && meta.dev() == self.dev && meta.ino() == self.ino
        });
        if same {
            Ok(())
        } else {
            Err(CheckpointError::Io {
                path: self.dir.clone(),
                source: std::io::Error::other(
                    "the fork's directory was replaced while it was made",
                ),
            })
        }
    }
}

/// Makes the claimed, empty `dir` a worktree of the repository at
/// `workspace` on a new branch named after `suffix`, at the repository's
/// `HEAD`, with no file checked out (the checkpoint's are written next).
/// Returns the branch, or `None` when the workspace is not the top of a
/// repository with a commit (the fork is then a plain copy).
pub(crate) fn worktree(
    workspace: &Path,
    dir: &Path,
    suffix: &str,
) -> Result<Option<String>, CheckpointError> {
    if std::fs::symlink_metadata(workspace.join(".git")).is_err() {
        return Ok(None);
    }
    let Ok(top) = user_git(workspace, ["rev-parse", "--show-toplevel"]) else {
        return Ok(None);
    };
    let top = PathBuf::from(String::from_utf8_lossy(&top).trim());
    let same_dir = match (top.canonicalize(), workspace.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same_dir || user_git(workspace, ["rev-parse", "--verify", "-q", "HEAD^{commit}"]).is_err() {
        return Ok(None);
    }
    let mut branch = None;
    for n in 1..=NAMES {
        let candidate = match n {
            1 => format!("gantry/{suffix}"),
            n => format!("gantry/{suffix}-{n}"),
        };
        let exists = user_git(
            workspace,
            [
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/heads/{candidate}"),
            ],
        )
        .is_ok();
        if !exists {
            branch = Some(candidate);
            break;
        }
    }
    let Some(branch) = branch else {
        return Ok(None);
    };
    user_git(
        workspace,
        [
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("-q"),
            OsStr::new("--no-checkout"),
            OsStr::new("-b"),
            OsStr::new(&branch),
            dir.as_os_str(),
            OsStr::new("HEAD"),
        ],
    )?;
    // The worktree's index at its branch's commit, no file read or
    // written: what the checkpoint changed shows as the fork's changes.
    user_git(dir, ["read-tree", "HEAD"])?;
    Ok(Some(branch))
}

/// Runs the user's own `git args` in `dir` (their repository, discovered
/// from there), isolated as the store's is: no hook, no fsmonitor, none of
/// the daemon's environment but `PATH`, no global or system config.
fn user_git<I, S>(dir: &Path, args: I) -> Result<Vec<u8>, CheckpointError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let output = isolated()
        .args(&args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(CheckpointError::GitMissing)?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(CheckpointError::Git {
            args: args
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

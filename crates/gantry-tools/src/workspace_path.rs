//! Path safety for file tools: every path a model gives is resolved against
//! the workspace and must stay inside it, after `..` and symlinks are
//! resolved; and the file tools' I/O on such a path cannot leave the
//! workspace either, even if the tree changes between the check and the open.
//!
//! The check ([`resolve`]) works on the *real* path: the deepest existing
//! ancestor is canonicalized by the OS (which resolves every symlink and `..`
//! the way a later `open` would), dangling symlinks are followed by hand, and
//! only the components that do not exist yet are appended lexically (they
//! will be created as plain directories or files, so lexical handling is
//! exact for them). That gives the model a clear error for a path that leads
//! out.
//!
//! A check alone is not enough: the tools run in Gantry's process, outside
//! the sandbox, while the agent's own shell can swap a checked component for
//! a symlink before the tool opens it. So the I/O (`beneath`) never opens
//! the checked absolute path: it opens relative to a handle on the workspace
//! directory with a resolution the kernel confines to it, and writes by
//! renaming a temporary file over the name (never following it).

mod beneath;

pub use beneath::{WorkspaceDir, is_escape};

use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Symlink hops followed before giving up, like the kernel's `ELOOP` limit.
const MAX_SYMLINK_HOPS: u32 = 40;

/// A path that was checked to lie inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspacePath {
    /// The real absolute path (symlinks resolved) as it was when checked.
    /// Open it only through this type's methods (or a [`WorkspaceDir`]),
    /// which stay inside the workspace even if the tree changed since.
    pub abs: PathBuf,
    /// The same path relative to the workspace (`"."` for the workspace itself),
    /// with `/` separators, for items and messages.
    pub rel: String,
    /// The canonical workspace the path was checked against.
    pub root: PathBuf,
}

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// The path was empty.
    Empty,
    /// The path (after resolving `..` and symlinks) leaves the workspace.
    Outside {
        /// The path as given.
        given: String,
        /// The workspace it must stay in.
        workspace: PathBuf,
    },
    /// The path could not be resolved (permission denied, symlink loop...).
    Unresolvable {
        /// The path as given.
        given: String,
        /// The OS error.
        reason: String,
    },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Empty => write!(
                f,
                "path is empty; give a path relative to the workspace (e.g. \"src/main.rs\")"
            ),
            PathError::Outside { given, workspace } => write!(
                f,
                "path {given:?} is outside the workspace {}; only paths inside the workspace \
                 are allowed (relative paths are resolved against it, and `..` or symlinks \
                 may not lead out of it)",
                workspace.display()
            ),
            PathError::Unresolvable { given, reason } => {
                write!(f, "cannot resolve path {given:?}: {reason}")
            }
        }
    }
}

impl std::error::Error for PathError {}

/// Resolves `raw` (relative to `workspace`, or absolute) to a real path inside
/// the workspace. The path itself need not exist (so new files can be
/// written), but whatever part of it exists is resolved through symlinks.
pub fn resolve(workspace: &Path, raw: &str) -> Result<WorkspacePath, PathError> {
    if raw.is_empty() {
        return Err(PathError::Empty);
    }
    // The context promises a canonical workspace; canonicalize anyway so a
    // caller that passes e.g. a symlinked temp dir cannot make every path
    // look "outside".
    let ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let given = Path::new(raw);
    let candidate = if given.is_absolute() {
        given.to_path_buf()
    } else {
        ws.join(given)
    };
    let real = real_path(&candidate, 0).map_err(|e| PathError::Unresolvable {
        given: raw.to_string(),
        reason: e.to_string(),
    })?;
    let Ok(rel) = real.strip_prefix(&ws) else {
        return Err(PathError::Outside {
            given: raw.to_string(),
            workspace: ws,
        });
    };
    let rel = display_rel(rel);
    Ok(WorkspacePath {
        rel,
        abs: real,
        root: ws,
    })
}

/// `rel` with `/` separators, `"."` when empty.
pub fn display_rel(rel: &Path) -> String {
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

/// The real location `path` (absolute) refers to, as far as it exists.
fn real_path(path: &Path, hops: u32) -> io::Result<PathBuf> {
    match std::fs::canonicalize(path) {
        Ok(p) => return Ok(p),
        // Only "does not exist (yet)" is handled below; anything else
        // (permission denied, loops, a file used as a directory) is a real
        // error the model should see.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    // A dangling symlink: `canonicalize` fails, but writing to it would
    // create its target, so follow it by hand and check where it leads.
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && meta.file_type().is_symlink()
    {
        if hops >= MAX_SYMLINK_HOPS {
            return Err(io::Error::other("too many levels of symbolic links"));
        }
        let target = std::fs::read_link(path)?;
        let base = path.parent().unwrap_or(Path::new("/"));
        // `join` replaces the base when the target is absolute.
        return real_path(&base.join(target), hops + 1);
    }
    let mut comps = path.components();
    let last = comps.next_back();
    let parent = comps.as_path();
    match last {
        Some(Component::Normal(name)) => Ok(real_path(parent, hops)?.join(name)),
        Some(Component::ParentDir) => {
            // The parent's real path has no symlinks left, so popping is exact.
            let mut p = real_path(parent, hops)?;
            p.pop();
            Ok(p)
        }
        Some(Component::CurDir) => real_path(parent, hops),
        // The root always exists; canonicalize cannot have said NotFound.
        Some(Component::RootDir) | Some(Component::Prefix(_)) | None => Ok(path.to_path_buf()),
    }
}

//! Paths as rules see them: lexically normalised, and matched relative to
//! the workspace unless the rule is absolute.

use std::path::{Component, Path, PathBuf};

use globset::GlobMatcher;

/// Joins `path` onto `base` and resolves `.` and `..` lexically (no
/// filesystem access: the policy is pure). `..` never climbs above the root.
pub fn normalize(base: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Whether a path glob matches `path` (absolute and normalised).
pub(super) fn path_matches(
    matcher: &GlobMatcher,
    absolute: bool,
    path: &Path,
    workspace: &Path,
) -> bool {
    if absolute {
        return matcher.is_match(path);
    }
    match path.strip_prefix(normalize(workspace, Path::new(""))) {
        Ok(rel) => matcher.is_match(rel),
        Err(_) => false,
    }
}

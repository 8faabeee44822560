//! Directory walking shared by `list_dir`, `glob` and `grep`.

use std::path::Path;

use ignore::WalkBuilder;

use crate::workspace_path::display_rel;

/// A walker over `root` that respects `.gitignore` (also outside git
/// repositories, since a workspace need not be one), `.ignore` and git's
/// excludes, never enters `.git`, and does not follow symlinks (so the walk
/// does not leave the workspace through a link that is already there).
///
/// The walker opens directories by path, so a directory swapped for a
/// symlink mid-walk can still show it names from elsewhere: callers that
/// read a file's content open it through
/// [`WorkspaceDir`](crate::workspace_path::WorkspaceDir), never by the
/// entry's path.
pub(crate) fn walker(root: &Path, hidden: bool) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    b.hidden(hidden)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    b
}

/// `path` relative to `base` with `/` separators (`path` itself if not under `base`).
pub(crate) fn rel_to(base: &Path, path: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(rel) => display_rel(rel),
        Err(_) => path.display().to_string(),
    }
}

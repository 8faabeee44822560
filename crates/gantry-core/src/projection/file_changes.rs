//! What a file change did, read from the unified diff the file tools write
//! (`--- /dev/null` for a new file), so clients count lines and tell a new
//! file from an edit the same way, without each reading the diff itself.

/// What a file change did to its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileChangeKind {
    /// A new file.
    Add,
    /// An existing file changed.
    Update,
    /// A file removed.
    Delete,
}

/// A file change in numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiffStat {
    /// What it did; `None` while there is no diff (a failed change).
    pub kind: Option<FileChangeKind>,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
}

/// The numbers of the unified diff `diff`.
pub fn diff_stat(diff: &str) -> DiffStat {
    let mut stat = DiffStat::default();
    let mut from = None;
    // Headers come before the first hunk; after it, `+++ x` is an added
    // line that starts with `++ x`.
    let mut in_hunks = false;
    for line in diff.lines() {
        if line.starts_with("@@") {
            in_hunks = true;
        } else if let Some(path) = line.strip_prefix("--- ").filter(|_| !in_hunks) {
            from = Some(path);
        } else if let Some(to) = line.strip_prefix("+++ ").filter(|_| !in_hunks) {
            stat.kind = Some(match (from, to) {
                (Some("/dev/null"), _) => FileChangeKind::Add,
                (_, "/dev/null") => FileChangeKind::Delete,
                _ => FileChangeKind::Update,
            });
        } else if line.starts_with('+') {
            stat.added += 1;
        } else if line.starts_with('-') {
            stat.removed += 1;
        }
    }
    stat
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_and_an_edit_read_apart() {
        let add = diff_stat("--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+x\n");
        assert_eq!(
            add,
            DiffStat {
                kind: Some(FileChangeKind::Add),
                added: 1,
                removed: 0
            }
        );
        let edit = diff_stat("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+y\n");
        assert_eq!(
            edit,
            DiffStat {
                kind: Some(FileChangeKind::Update),
                added: 1,
                removed: 1
            }
        );
        assert_eq!(diff_stat(""), DiffStat::default());
        // Content lines that look like headers are content.
        let odd = diff_stat("--- a/a\n+++ b/a\n@@ -1 +1 @@\n--- x\n+++ y\n");
        assert_eq!((odd.added, odd.removed), (1, 1));
    }
}

//! A file change's unified diff as the texts ACP's `diff` content wants.
//! The diff holds the changed hunks with their context, not whole files:
//! the texts are those hunks before and after (joined with a blank line
//! between hunks), which is what an editor shows; a new file's diff is its
//! whole text, and its old text is `null`.

use gantry_core::projection::{FileChangeKind, diff_stat};

/// The text before (`None` for a new file) and after `diff`; `None` when
/// the change has no diff (it failed).
pub(crate) fn diff_texts(diff: &str) -> Option<(Option<String>, String)> {
    let kind = diff_stat(diff).kind?;
    let mut old: Vec<Vec<&str>> = Vec::new();
    let mut new: Vec<Vec<&str>> = Vec::new();
    let mut in_hunks = false;
    for line in diff.lines() {
        if line.starts_with("@@") {
            in_hunks = true;
            old.push(Vec::new());
            new.push(Vec::new());
            continue;
        }
        if !in_hunks {
            continue;
        }
        let (Some(o), Some(n)) = (old.last_mut(), new.last_mut()) else {
            continue;
        };
        if let Some(rest) = line.strip_prefix('+') {
            n.push(rest);
        } else if let Some(rest) = line.strip_prefix('-') {
            o.push(rest);
        } else if let Some(rest) = line.strip_prefix(' ') {
            o.push(rest);
            n.push(rest);
        } else if line.is_empty() {
            o.push("");
            n.push("");
        }
        // `\ No newline at end of file` and the like: not text.
    }
    let join = |hunks: Vec<Vec<&str>>| {
        hunks
            .iter()
            .map(|h| h.join("\n"))
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    let old = join(old);
    let mut new = join(new);
    if kind == FileChangeKind::Delete {
        new.clear();
    }
    Some(match kind {
        FileChangeKind::Add => (None, new),
        _ => (Some(old), new),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_has_no_old_text() {
        let diff = "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n";
        assert_eq!(diff_texts(diff), Some((None, "one\ntwo".to_owned())));
    }

    #[test]
    fn an_edit_gives_its_hunk_before_and_after() {
        let diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n keep\n-old\n+new\n end\n";
        assert_eq!(
            diff_texts(diff),
            Some((
                Some("keep\nold\nend".to_owned()),
                "keep\nnew\nend".to_owned()
            ))
        );
        assert_eq!(diff_texts(""), None);
    }
}

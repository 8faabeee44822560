//! How long a source file may grow: one file, one subject.

use crate::deps::glob;

/// Lines a file may have, by directory (`*` stands for one path
/// component); the first directory that holds a file applies to it.
pub(crate) const LIMITS: &[(&str, usize)] = &[
    // The engine and the pure crates: read most, changed most.
    ("crates/gantry-core/src", 500),
    ("crates/gantry-policy/src", 500),
    ("crates/gantry-types/src", 500),
    ("crates/*/src", 800),
];

/// Files over their limit today, each with its line count when it was
/// listed: it may not grow past that, and once it is within its limit its
/// entry must go, so the list only shrinks. Split them by subject.
pub(crate) const OVERSIZED: &[(&str, usize)] = &[];

pub(crate) struct SourceFile {
    /// Relative to the workspace root, with `/`.
    pub path: String,
    pub lines: usize,
    /// Written by a tool (`@generated` near the top): not held to a limit.
    pub generated: bool,
}

impl SourceFile {
    pub(crate) fn new(path: impl Into<String>, text: &str) -> SourceFile {
        SourceFile {
            path: path.into(),
            lines: text.lines().count(),
            generated: text.lines().take(5).any(|l| l.contains("@generated")),
        }
    }
}

/// Every file over its limit and not in `oversized` (or grown past its
/// entry there), and every entry of `oversized` that is no longer needed.
pub(crate) fn check(files: &[SourceFile], oversized: &[(&str, usize)]) -> Vec<String> {
    let mut failures = Vec::new();
    for file in files.iter().filter(|f| !f.generated) {
        let Some((dir, max)) = limit_of(&file.path) else {
            continue;
        };
        let (path, lines) = (&file.path, file.lines);
        let listed = oversized.iter().find(|(p, _)| p == path).map(|(_, n)| *n);
        match listed {
            None if lines > max => failures.push(format!(
                "{path} has {lines} lines, over the {max} allowed in {dir}: split it by subject"
            )),
            Some(was) if lines > max && lines > was => failures.push(format!(
                "{path} has {lines} lines, over the {max} allowed in {dir} and over the {was} \
                 OVERSIZED lets it keep until it is split: split it, or at least do not grow it"
            )),
            Some(_) if lines <= max => failures.push(format!(
                "{path} has {lines} lines, within the {max} allowed in {dir} now: \
                 remove it from OVERSIZED in crates/gantry-tidy/tests/it/file_size.rs"
            )),
            _ => {}
        }
    }
    for (path, _) in oversized {
        if !files.iter().any(|f| f.path == *path) {
            failures.push(format!(
                "{path} is in OVERSIZED but is no file under crates/*/src: \
                 remove it from crates/gantry-tidy/tests/it/file_size.rs"
            ));
        }
    }
    failures
}

fn limit_of(path: &str) -> Option<(&'static str, usize)> {
    let parts: Vec<&str> = path.split('/').collect();
    LIMITS.iter().copied().find(|(dir, _)| {
        let dir: Vec<&str> = dir.split('/').collect();
        parts.len() > dir.len() && dir.iter().zip(&parts).all(|(d, p)| glob(d, p))
    })
}

//! README.md and the book (`docs/src/`) hold together: every relative link
//! and image leads to a file that exists and, with `#anchor`, to a heading
//! in it (mdBook's ids); every page of the book is in its `SUMMARY.md`;
//! every code block says what it is (`sh` runs as written, `sh,no-run`
//! does not, other languages are shown); README is a front page of at
//! most [`README_MAX_LINES`] lines.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// README.md's length at most: a front page, the rest is the book.
pub(crate) const README_MAX_LINES: usize = 300;

/// The info strings a code block may open with.
const BLOCK_KINDS: &[&str] = &[
    "sh",
    "sh,no-run",
    "text",
    "toml",
    "json",
    "jsonc",
    "ini",
    "ts",
    "python",
    "rust",
    "console",
];

/// A markdown page: its path (relative to the root, `/`-separated) and text.
pub(crate) struct Page {
    pub path: String,
    pub text: String,
}

/// Lines with their numbers (from 1).
type Numbered<'a> = Vec<(usize, &'a str)>;

/// The lines of `text` outside fenced code blocks, and each block's info
/// string with its line.
fn split(text: &str) -> (Numbered<'_>, Numbered<'_>) {
    let (mut prose, mut fences) = (Vec::new(), Vec::new());
    let mut in_block = false;
    for (n, line) in text.lines().enumerate() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            if !in_block {
                fences.push((n + 1, info.trim()));
            }
            in_block = !in_block;
        } else if !in_block {
            prose.push((n + 1, line));
        }
    }
    (prose, fences)
}

/// A heading's id as mdBook makes it: its text without markup,
/// lower-cased, spaces to `-`, and only letters, digits, `-` and `_` kept.
pub(crate) fn heading_id(heading: &str) -> String {
    let mut text = heading.to_owned();
    // A link in a heading reads as its text.
    while let (Some(open), Some(mid)) = (text.find('['), text.find("](")) {
        let Some(close) = text[mid..].find(')') else {
            break;
        };
        if open > mid {
            break;
        }
        text = format!(
            "{}{}{}",
            &text[..open],
            &text[open + 1..mid],
            &text[mid + close + 1..]
        );
    }
    text.trim()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The ids of a page's headings, repeats numbered as mdBook numbers them.
fn anchors(text: &str) -> Vec<String> {
    let (prose, _) = split(text);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids = Vec::new();
    for (_, line) in prose {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let id = heading_id(&line[hashes..]);
        let n = seen.entry(id.clone()).or_insert(0);
        ids.push(if *n == 0 {
            id.clone()
        } else {
            format!("{id}-{n}")
        });
        *n += 1;
    }
    ids
}

/// The targets of a line's links and images (`](target)`), outside inline
/// code.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_code = false;
    let mut rest = line;
    while let Some(at) = rest.find(['`', ']']) {
        let c = rest.as_bytes()[at];
        rest = &rest[at + 1..];
        if c == b'`' {
            in_code = !in_code;
        } else if !in_code
            && rest.starts_with('(')
            && let Some(end) = rest.find(')')
        {
            let target = rest[1..end].split_whitespace().next().unwrap_or_default();
            targets.push(target.to_owned());
            rest = &rest[end..];
        }
    }
    targets
}

/// `base`'s directory joined with `relative`, `..` resolved lexically.
fn resolve(base: &str, relative: &str) -> String {
    let mut path: PathBuf = Path::new(base).parent().unwrap_or(Path::new("")).into();
    for part in Path::new(relative).components() {
        match part {
            Component::ParentDir => {
                path.pop();
            }
            Component::Normal(p) => path.push(p),
            _ => {}
        }
    }
    path.to_string_lossy().replace('\\', "/")
}

/// What is wrong in `pages`; `exists` says whether a file (not a page) is
/// there, e.g. an image.
pub(crate) fn check(pages: &[Page], exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut failures = Vec::new();
    let by_path: BTreeMap<&str, &Page> = pages.iter().map(|p| (p.path.as_str(), p)).collect();
    for page in pages {
        let (prose, fences) = split(&page.text);
        for (n, info) in fences {
            if !BLOCK_KINDS.contains(&info) {
                failures.push(format!(
                    "{}:{n}: a code block opens with ```{info}: say what it is \
                     (sh runs as written, sh,no-run does not; text, toml, json ... are shown)",
                    page.path
                ));
            }
        }
        for (n, line) in prose {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
                let file = if file.is_empty() {
                    page.path.clone()
                } else {
                    resolve(&page.path, file)
                };
                let linked = by_path.get(file.as_str());
                if linked.is_none() && !exists(&file) {
                    failures.push(format!(
                        "{}:{n}: the link to {target} leads to {file}, which does not exist",
                        page.path
                    ));
                    continue;
                }
                if anchor.is_empty() {
                    continue;
                }
                let Some(linked) = linked else {
                    failures.push(format!(
                        "{}:{n}: the link to {target} has an anchor into a file that is not a page",
                        page.path
                    ));
                    continue;
                };
                if !anchors(&linked.text).iter().any(|a| a == anchor) {
                    failures.push(format!(
                        "{}:{n}: {file} has no heading with the id #{anchor} (its ids: {})",
                        page.path,
                        anchors(&linked.text).join(", ")
                    ));
                }
            }
        }
    }
    if let Some(summary) = by_path.get("docs/src/SUMMARY.md") {
        let listed: Vec<String> = split(&summary.text)
            .0
            .iter()
            .flat_map(|(_, l)| link_targets(l))
            .map(|t| resolve("docs/src/SUMMARY.md", &t))
            .collect();
        for page in pages.iter().filter(|p| p.path.starts_with("docs/src/")) {
            if page.path != "docs/src/SUMMARY.md" && !listed.contains(&page.path) {
                failures.push(format!(
                    "{} is not in docs/src/SUMMARY.md: the book would not show it",
                    page.path
                ));
            }
        }
    }
    if let Some(readme) = by_path.get("README.md") {
        let lines = readme.text.lines().count();
        if lines > README_MAX_LINES {
            failures.push(format!(
                "README.md has {lines} lines, over {README_MAX_LINES}: it is a front page; \
                 move the details into the book (docs/src/)"
            ));
        }
    }
    failures
}

/// README.md, ARCHITECTURE.md and every page under `docs/src/` of `root`.
pub(crate) fn pages(root: &Path) -> Vec<Page> {
    let mut pages = Vec::new();
    for name in ["README.md", "ARCHITECTURE.md"] {
        let text =
            std::fs::read_to_string(root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        pages.push(Page {
            path: name.to_owned(),
            text,
        });
    }
    let mut dirs = vec![root.join("docs/src")];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let relative = path.strip_prefix(root).unwrap_or(&path);
                pages.push(Page {
                    path: relative.to_string_lossy().replace('\\', "/"),
                    text,
                });
            }
        }
    }
    pages.sort_by(|a, b| a.path.cmp(&b.path));
    pages
}

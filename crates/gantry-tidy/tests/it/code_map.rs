//! ARCHITECTURE.md's code map matches the tree: one `### `crates/<name>``
//! section per crate under `crates/`, and no section for a crate that is
//! not there.

/// The crates the code map has a section for, in its order: the
/// `### `crates/<name>`` headings between `## Code map` and the next `## `.
pub(crate) fn sections(architecture_md: &str) -> Vec<String> {
    architecture_md
        .lines()
        .skip_while(|l| l.trim_end() != "## Code map")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| l.trim_end().strip_prefix("### `crates/")?.strip_suffix('`'))
        .map(|name| name.trim_end_matches('/').to_owned())
        .collect()
}

/// What is wrong between the code map and `crate_dirs` (the directories
/// under `crates/` holding a `Cargo.toml`).
pub(crate) fn check(architecture_md: &str, crate_dirs: &[String]) -> Vec<String> {
    let sections = sections(architecture_md);
    let mut failures = Vec::new();
    if !architecture_md
        .lines()
        .any(|l| l.trim_end() == "## Code map")
    {
        failures.push("ARCHITECTURE.md has no `## Code map` section".to_owned());
    }
    for dir in crate_dirs.iter().filter(|d| !sections.contains(d)) {
        failures.push(format!(
            "crates/{dir} has no section in ARCHITECTURE.md's code map: add \
             \"### `crates/{dir}`\" saying what it holds and what it depends on"
        ));
    }
    for section in sections.iter().filter(|s| !crate_dirs.contains(s)) {
        failures.push(format!(
            "ARCHITECTURE.md's code map has a section for crates/{section}, which does not \
             exist: rename the section to the crate's directory, or remove it"
        ));
    }
    failures
}

//! One integration-test binary per crate: every file directly in a crate's
//! `tests/` is its own binary that links the world, which on 2 cores costs
//! more than the tests themselves.

use std::path::Path;

/// The test binaries cargo would build from `tests` (a folder of a crate):
/// each `*.rs` directly in it, and each folder holding a `main.rs`.
pub(crate) fn binaries(tests: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(tests) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs") || p.join("main.rs").is_file())
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    found.sort();
    found
}

/// A failure for every crate (`(name, its tests folder)`) with more than
/// one test binary.
pub(crate) fn check(crates: &[(String, std::path::PathBuf)]) -> Vec<String> {
    crates
        .iter()
        .filter_map(|(name, tests)| {
            let found = binaries(tests);
            (found.len() > 1).then(|| {
                format!(
                    "{name} has {} test binaries ({}): make them modules of tests/it/main.rs",
                    found.len(),
                    found.join(", ")
                )
            })
        })
        .collect()
}

#[test]
fn a_second_test_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let tests = dir.path().join("tests");
    std::fs::create_dir_all(tests.join("it")).unwrap();
    std::fs::write(tests.join("it/main.rs"), "").unwrap();
    let crates = vec![("demo".to_owned(), tests.clone())];
    assert!(check(&crates).is_empty());
    std::fs::write(tests.join("extra.rs"), "").unwrap();
    assert_eq!(
        check(&crates),
        ["demo has 2 test binaries (extra.rs, it): make them modules of tests/it/main.rs"]
    );
}

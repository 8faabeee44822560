//! The rules over this workspace's tree.

use crate::manifest::Workspace;
use crate::{code_map, deps, docs, file_size};

fn assert_none(what: &str, failures: Vec<String>) {
    assert!(failures.is_empty(), "{what}:\n- {}", failures.join("\n- "));
}

#[test]
fn the_workspace_has_its_crates() {
    let workspace = Workspace::load();
    // A loader that finds nothing would pass every rule.
    for name in ["gantry-core", "gantry-types", "gantry-cli", "gantry-tidy"] {
        assert!(
            workspace.manifests.iter().any(|m| m.name == name),
            "{name} not found under {}",
            workspace.root.join("crates").display()
        );
    }
    assert!(
        workspace
            .source_files()
            .iter()
            .any(|f| f.path == "crates/gantry-core/src/lib.rs")
    );
}

#[test]
fn dependencies_follow_the_architecture() {
    let workspace = Workspace::load();
    assert_none(
        "dependencies against ARCHITECTURE.md",
        deps::check(&workspace.manifests, deps::ALLOWED),
    );
}

#[test]
fn rules_name_crates_that_exist() {
    let workspace = Workspace::load();
    assert_none(
        "rules naming no crate",
        deps::unknown_crates(&workspace.manifests, deps::PLANNED),
    );
}

#[test]
fn no_source_file_over_its_limit() {
    let workspace = Workspace::load();
    assert_none(
        "source files over their size limit",
        file_size::check(&workspace.source_files(), file_size::OVERSIZED),
    );
}

#[test]
fn the_code_map_matches_the_tree() {
    let workspace = Workspace::load();
    assert_none(
        "ARCHITECTURE.md's code map against crates/",
        code_map::check(&workspace.architecture_md(), &workspace.crate_dirs),
    );
}

#[test]
fn each_crate_has_one_test_binary() {
    let workspace = Workspace::load();
    let crates: Vec<_> = workspace
        .crate_dirs
        .iter()
        .map(|dir| {
            let tests = workspace.root.join("crates").join(dir).join("tests");
            (dir.clone(), tests)
        })
        .collect();
    assert_none(
        "crates with more than one test binary",
        crate::test_binaries::check(&crates),
    );
}

#[test]
fn readme_and_the_book_hold_together() {
    let workspace = Workspace::load();
    let pages = docs::pages(&workspace.root);
    // A loader that finds no page would pass every rule.
    assert!(
        pages.iter().any(|p| p.path == "docs/src/SUMMARY.md"),
        "no book under {}",
        workspace.root.join("docs/src").display()
    );
    let root = workspace.root.clone();
    assert_none(
        "README.md and the book",
        docs::check(&pages, &|path: &str| root.join(path).exists()),
    );
}

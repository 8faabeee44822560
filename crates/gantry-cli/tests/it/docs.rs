//! What README.md and the book (`docs/`) show runs: every `sh` block (the
//! ones that need no network, key or other machine; the rest are
//! `sh,no-run`) runs as written, with `gantry` on PATH, in a fresh HOME
//! and an empty directory; the systemd unit of "Operating Gantry" passes
//! `systemd-analyze verify`; `mdbook build docs` succeeds without a
//! warning. README's Quickstart has a test of its own (`quickstart.rs`);
//! that every `gantry` line parses is a test of the CLI's
//! (`src/docs_commands.rs`), links and anchors are `gantry-tidy`'s.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::Scratch;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the checkout")
}

/// The `sh` blocks of README.md and the book's pages: (where, script).
fn runnable_blocks() -> Vec<(String, String)> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("docs/src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    let mut blocks = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a page");
        let name = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        // Outside a block, in a runnable one (from its line), in another.
        enum At {
            Prose,
            Sh(usize, String),
            Other,
        }
        let mut at = At::Prose;
        for (n, line) in text.lines().enumerate() {
            let fence = line.trim_start().strip_prefix("```");
            at = match (at, fence) {
                (At::Prose, Some(info)) if info.trim() == "sh" => At::Sh(n + 1, String::new()),
                (At::Prose, Some(_)) => At::Other,
                (At::Sh(start, script), Some(_)) => {
                    blocks.push((format!("{name}:{start}"), script));
                    At::Prose
                }
                (At::Sh(start, mut script), None) => {
                    script.push_str(line);
                    script.push('\n');
                    At::Sh(start, script)
                }
                (At::Other, Some(_)) => At::Prose,
                (at, None) => at,
            };
        }
    }
    // README's Quickstart builds with cargo: quickstart.rs runs it.
    blocks.retain(|(_, script)| !script.starts_with("cargo run"));
    blocks
}

#[test]
fn every_runnable_block_in_the_docs_runs_as_written() {
    let blocks = runnable_blocks();
    // A reader that finds no block would pass.
    assert!(blocks.len() >= 5, "only {} sh blocks found", blocks.len());
    let bin = Path::new(env!("CARGO_BIN_EXE_gantry"))
        .parent()
        .expect("the binary's dir")
        .to_owned();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    for (at, script) in blocks {
        let s = Scratch::new();
        let home = s.dir.path().join("home");
        let cwd = s.dir.path().join("cwd");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&cwd).expect("cwd");
        let out = Command::new("timeout")
            .args(["120", "bash", "-euo", "pipefail", "-c"])
            .arg(&script)
            .env_clear()
            .env("PATH", &path)
            .env("HOME", &home)
            .current_dir(&cwd)
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{at}: the block did not run ({}):\n{script}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Whether a tool the test needs is missing where that may be (outside CI).
fn missing(tool: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!ci, "{tool} is missing: .ci/run installs it");
        eprintln!("SKIPPED: {tool} is missing (CI installs it)");
    }
    !found
}

#[test]
fn the_systemd_unit_verifies() {
    if missing("systemd-analyze") {
        return;
    }
    let unit = std::fs::read_to_string(root().join("docs/src/operating/gantry.service"))
        .expect("the unit");
    assert!(
        unit.contains("ExecStart=/usr/local/bin/gantry serve"),
        "{unit}"
    );
    // Where the unit expects the binary, this build's: verify checks that
    // ExecStart names an executable.
    let unit = unit.replace("/usr/local/bin/gantry", env!("CARGO_BIN_EXE_gantry"));
    let s = Scratch::new();
    let file = s.dir.path().join("gantry.service");
    std::fs::write(&file, unit).expect("write the unit");
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&file)
        .output()
        .expect("systemd-analyze runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "systemd-analyze verify: {said}");
    assert!(
        !said.contains("gantry.service"),
        "systemd-analyze has something to say about the unit: {said}"
    );
}

#[test]
fn the_book_builds_without_a_warning() {
    if missing("mdbook") {
        return;
    }
    let s = Scratch::new();
    let out = Command::new("mdbook")
        .arg("build")
        .arg(root().join("docs"))
        .arg("--dest-dir")
        .arg(s.dir.path().join("book"))
        .output()
        .expect("mdbook runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mdbook build docs: {said}");
    assert!(
        !said.contains("WARN") && !said.contains("ERROR"),
        "mdbook build docs warned: {said}"
    );
    assert!(
        s.dir.path().join("book/protocols/a3s.html").exists(),
        "the book has no A3S page"
    );
}

//! README.md's Quickstart, as written: its first command's arguments run
//! against the `gantry` binary `cargo run` builds (`default-run`), in a
//! fresh HOME and a temp dir, must answer and leave `greet.sh` that greets.
//! A change to the command in README that no longer runs fails here.

use std::process::Command;

use crate::common::{Scratch, stderr, stdout};

/// The first `cargo run` line of README's Quickstart block.
fn quickstart_command() -> String {
    let readme = include_str!("../../../../README.md");
    let (_, quickstart) = readme
        .split_once("## Quickstart")
        .expect("README has a Quickstart");
    let (_, block) = quickstart.split_once("```sh\n").expect("a sh block");
    let (block, _) = block.split_once("```").expect("a closed block");
    block
        .lines()
        .find(|l| l.starts_with("cargo run"))
        .expect("a cargo run command")
        .to_owned()
}

/// `line` as a shell splits it (the Quickstart quotes with `"` only).
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            '#' if !quoted && word.is_empty() => break,
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

#[test]
fn the_quickstart_runs_as_written() {
    let line = quickstart_command();
    let words = words(&line);
    // What `cargo run` adds before `--`: which package, nothing more, so
    // the binary it runs is the package's default one.
    let (cargo, args) = words.split_at(
        words
            .iter()
            .position(|w| w == "--")
            .expect("cargo run ... --"),
    );
    assert_eq!(cargo[..2], ["cargo", "run"], "{line}");
    let manifest = include_str!("../../Cargo.toml");
    assert!(
        manifest.contains("default-run = \"gantry\""),
        "cargo run -p gantry-cli must know which binary to run"
    );
    assert!(
        cargo.windows(2).any(|w| w == ["-p", "gantry-cli"]),
        "{line}"
    );

    let s = Scratch::new();
    let demo_dir = s.dir.path().join("gantry-demo");
    // The Quickstart's own paths: the example from the checkout, its
    // `/tmp/gantry-demo` inside this test's temp dir.
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let args: Vec<String> = args[1..]
        .iter()
        .map(|a| a.replace("/tmp/gantry-demo", &demo_dir.display().to_string()))
        .collect();
    let out = s
        .gantry()
        .current_dir(repo)
        .args(&args)
        .output()
        .expect("run gantry");
    assert!(out.status.success(), "{line}\n{}", stderr(&out));
    assert!(
        stdout(&out).contains("Greetings from Gantry"),
        "{}",
        stdout(&out)
    );
    let greeted = Command::new("bash")
        .arg(demo_dir.join("greet.sh"))
        .arg("newcomer")
        .output()
        .expect("bash");
    assert_eq!(
        String::from_utf8_lossy(&greeted.stdout),
        "Hello, newcomer! Greetings from Gantry.\n"
    );
}

//! Runs the `@gantry/rome-runner` package's own tests (clients/rome: Node's
//! test runner, the package built with tsc and type-checked against
//! `@rome-os/app-runtime` 0.3.0 and 0.6.x) against the real binaries, so
//! `cargo test` covers Rome's runner as a Rome host uses it. `.ci/run`
//! installs the package's dev dependencies (`npm ci`).

use std::path::Path;
use std::process::Command;

#[test]
fn the_rome_runner_package_passes_its_tests_against_gantry_serve() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/rome");
    assert!(
        dir.join("node_modules/typescript").is_dir(),
        "clients/rome has no dev dependencies: `npm ci --prefix clients/rome` (.ci/run does it)"
    );
    let out = Command::new("npm")
        .args(["test", "--silent"])
        .current_dir(&dir)
        .env("GANTRY_BIN", env!("CARGO_BIN_EXE_gantry"))
        .env("GANTRY_MOCK_LLM", env!("CARGO_BIN_EXE_gantry-mock-llm"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run npm: {e}"));
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the package's tests failed:\n{report}"
    );
    // An empty or skipped suite must not pass for a conforming one.
    let count = |label: &str| -> Option<u64> {
        report
            .lines()
            .find_map(|l| l.strip_prefix(label))
            .and_then(|n| n.trim().parse().ok())
    };
    assert!(count("# pass ").is_some_and(|n| n > 0), "{report}");
    assert_eq!(count("# fail "), Some(0), "{report}");
    assert_eq!(count("# skipped "), Some(0), "{report}");
    assert_eq!(count("# cancelled "), Some(0), "{report}");
}

//! Runs a Python conformance suite of `conformance/` against the real
//! binaries: pytest with `GANTRY_BIN` and `GANTRY_MOCK_LLM` set. `.ci/run`
//! installs grpcio, grpcio-tools and pytest; `GANTRY_TEST_PYTHON` names the
//! interpreter (default `python3`).

use std::path::Path;
use std::process::Command;

/// Runs `conformance/<suite>` and fails with its report unless every test
/// ran and passed.
pub(crate) fn run_suite(suite: &str) {
    let python = std::env::var("GANTRY_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conformance")
        .join(suite);
    let check = Command::new(&python)
        .args(["-c", "import grpc, grpc_tools, pytest"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        check.status.success(),
        "{python} lacks grpcio, grpcio-tools or pytest (.ci/run installs them): {}",
        String::from_utf8_lossy(&check.stderr)
    );
    let out = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "-rfE"])
        .arg(&dir)
        .env("GANTRY_BIN", env!("CARGO_BIN_EXE_gantry"))
        .env("GANTRY_MOCK_LLM", env!("CARGO_BIN_EXE_gantry-mock-llm"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run pytest: {e}"));
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the conformance suite failed:\n{report}"
    );
    // An empty or skipped suite must not pass for a conforming one.
    assert!(
        report.contains(" passed") && !report.contains("skipped"),
        "{report}"
    );
}

//! Runs the Python conformance suite of `gantry runner`
//! (conformance/runner: a grpcio control plane built from the
//! companyhelm.runner.v1 proto at test time) against the real binary, so
//! `cargo test` covers a control plane Gantry did not write. `.ci/run`
//! installs grpcio, grpcio-tools and pytest.

use std::path::Path;
use std::process::Command;

#[test]
fn python_grpcio_control_plane_drives_the_runner() {
    let python = std::env::var("GANTRY_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/runner");
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
        .arg(&suite)
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
    // An empty or skipped suite must not pass for a conforming runner.
    assert!(
        report.contains(" passed") && !report.contains("skipped"),
        "{report}"
    );
}

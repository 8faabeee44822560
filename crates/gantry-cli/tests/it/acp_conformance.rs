//! Runs the ACP conformance suite (conformance/acp: the official client
//! library `@agentclientprotocol/sdk`, on Node, against `gantry acp` on the
//! scripted model, every message validated against the library's JSON
//! schema) with the real binary, so `cargo test` covers a client Gantry
//! did not write. `.ci/run` installs the library and ajv into .ci/node;
//! `ACP_NODE_MODULES` may point elsewhere.

use std::path::PathBuf;
use std::process::Command;

fn node_modules() -> PathBuf {
    std::env::var_os("ACP_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.ci/node/node_modules")
        })
}

#[test]
fn the_official_acp_client_library_conforms() {
    let modules = node_modules();
    assert!(
        modules
            .join("@agentclientprotocol/sdk/schema/v1/schema.json")
            .is_file()
            && modules.join("ajv/dist/2020.js").is_file(),
        "@agentclientprotocol/sdk and ajv are not installed in {} (.ci/run installs them)",
        modules.display()
    );
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance/acp/conformance.mjs");
    let out = Command::new("node")
        .arg(&script)
        .env("GANTRY_BIN", env!("CARGO_BIN_EXE_gantry"))
        .env("GANTRY_MOCK_LLM", env!("CARGO_BIN_EXE_gantry-mock-llm"))
        .env("ACP_NODE_MODULES", &modules)
        .output()
        .unwrap_or_else(|e| panic!("cannot run node (.ci/run installs it): {e}"));
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the ACP conformance suite failed:\n{report}"
    );
    // The script exits non-zero on the first failed check; its last line
    // counts the checks, so an empty run does not pass.
    assert!(
        report.contains(" passed") && report.contains("ok - "),
        "{report}"
    );
}

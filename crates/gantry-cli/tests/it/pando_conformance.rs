//! Runs the Pando conformance suite (conformance/pando: pyzmq as DEALER
//! and SUB against `gantry serve --pando DIR`) against the real binaries,
//! so `cargo test` covers a client Gantry did not write.

use std::process::Command;

use crate::pytest;

#[test]
fn pyzmq_dealer_and_sub_conform() {
    let python = std::env::var("GANTRY_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let check = Command::new(&python)
        .args(["-c", "import zmq"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        check.status.success(),
        "{python} lacks pyzmq (.ci/run installs it): {}",
        String::from_utf8_lossy(&check.stderr)
    );
    pytest::run_suite("pando");
}

//! Runs the Python conformance suite of `gantry runner`
//! (conformance/runner: a grpcio control plane built from the
//! companyhelm.runner.v1 proto at test time) against the real binary, so
//! `cargo test` covers a control plane Gantry did not write.

use crate::pytest;

#[test]
fn python_grpcio_control_plane_drives_the_runner() {
    pytest::run_suite("runner");
}

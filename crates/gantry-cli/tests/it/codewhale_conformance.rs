//! Runs the CodeWhale conformance suite (conformance/codewhale: curl over
//! HTTP against `gantry serve --codewhale-addr`, Python's json over
//! `gantry codewhale --stdio`) against the real binaries, so `cargo test`
//! covers clients Gantry did not write.

use crate::pytest;

#[test]
fn curl_and_a_python_stdio_client_conform() {
    pytest::run_suite("codewhale");
}

//! Runs the Python conformance suite of the A3S CodeAgentService
//! (conformance/a3s: grpcio with stubs generated from the seed's proto)
//! against the real `gantry serve` binary, so `cargo test` covers a client
//! Gantry did not write.

use crate::pytest;

#[test]
fn python_grpcio_client_conforms() {
    pytest::run_suite("a3s");
}

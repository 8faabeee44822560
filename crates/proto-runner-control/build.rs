//! Generates the runner-control client and server from the seed's proto,
//! compiled by protox (pure Rust: no `protoc` needed to build).

const PROTO: &str = "companyhelm/runner/v1/runner.proto";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile([PROTO], ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    Ok(())
}

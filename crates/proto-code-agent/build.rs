//! Generates the CodeAgentService server and client from the seed's proto,
//! compiled by protox (pure Rust: no `protoc` needed to build).

use std::path::PathBuf;

use prost::Message;

const PROTO: &str = "a3s/code/agent/v1/code_agent.proto";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile([PROTO], ["proto"])?;
    // Reflection serves the descriptor set to clients such as grpcurl.
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("code_agent_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    Ok(())
}

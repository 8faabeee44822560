//! Generates the runner-control client and server from the seed's proto,
//! compiled by protox (pure Rust: no `protoc` needed to build).

const PROTO: &str = "companyhelm/runner/v1/runner.proto";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile([PROTO], ["proto"])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    write_single_message_methods(&fds, &out)?;
    tonic_prost_build::configure()
        // Malformed requests are INVALID_ARGUMENT (prost's codec says INTERNAL).
        .codec_path("gantry_grpc::ProtoCodec")
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    Ok(())
}

/// Writes `single_message_methods.rs`, a `&[&str]` of the paths of the
/// methods whose request is one message (unary and server-streaming), for
/// the request guard (`pb::SINGLE_MESSAGE_METHODS`).
fn write_single_message_methods(
    fds: &prost_types::FileDescriptorSet,
    out: &std::path::Path,
) -> std::io::Result<()> {
    let mut code = String::from("&[\n");
    for file in &fds.file {
        for service in &file.service {
            for method in service.method.iter().filter(|m| !m.client_streaming()) {
                code.push_str(&format!(
                    "    \"/{}.{}/{}\",\n",
                    file.package(),
                    service.name(),
                    method.name()
                ));
            }
        }
    }
    code.push(']');
    std::fs::write(out.join("single_message_methods.rs"), code)
}

//! Generates the runner-control messages, client and server of each
//! protocol version from its proto, compiled by protox (pure Rust: no
//! `protoc` needed to build). Both versions share one package name, so each
//! is written to a directory of its own and included as its own module.

/// The runner proto, under each version's directory.
const PROTO: &str = "companyhelm/runner/v1/runner.proto";

/// The versions, by directory under `proto/` (and under `OUT_DIR`).
const VERSIONS: [&str; 2] = ["v0_2", "v0_7"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    for version in VERSIONS {
        let fds = protox::compile([PROTO], [format!("proto/{version}"), "proto/shared".into()])?;
        let dir = out.join(version);
        std::fs::create_dir_all(&dir)?;
        // 0.2.0 has every method 0.7.0 has, and the GitHub rpcs besides.
        if version == "v0_2" {
            write_single_message_methods(&fds, &out)?;
        }
        tonic_prost_build::configure()
            // Malformed requests are INVALID_ARGUMENT (prost's codec says INTERNAL).
            .codec_path("gantry_grpc::ProtoCodec")
            .build_server(true)
            .build_client(true)
            .out_dir(&dir)
            .compile_fds(fds)?;
    }
    Ok(())
}

/// Writes `single_message_methods.rs`, a `&[&str]` of the paths of the
/// methods whose request is one message (unary and server-streaming), for
/// the request guard (`SINGLE_MESSAGE_METHODS`).
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

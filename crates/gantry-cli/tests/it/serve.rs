//! `gantry serve` as a real process: the CodeAgentService lifecycle rpcs,
//! grpc health, bearer-token auth, and graceful stops (the `Shutdown` rpc,
//! SIGTERM), through a tonic client generated from the seed's proto.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

use common::Scratch;
use proto_code_agent::pb;
use proto_code_agent::pb::code_agent_service_client::CodeAgentServiceClient;
use proto_code_agent::pb::health_check_response::Status as Health;
use tonic::transport::Channel;

/// A running `gantry serve` and the address it announced.
struct Server {
    child: Child,
    addr: String,
    /// The rest of its stderr, read on a thread.
    stderr: std::sync::mpsc::Receiver<String>,
}

impl Server {
    fn start(scratch: &Scratch, extra: &[&str]) -> Server {
        let mut child = scratch
            .gantry()
            .args([
                "serve",
                "--listen-addr",
                "127.0.0.1:0",
                "--storage-backend",
                "memory",
            ])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn gantry serve");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // The startup line names the port the OS picked.
        let addr = loop {
            let line = rx
                .recv_timeout(Duration::from_secs(60))
                .expect("gantry serve announces its address");
            if let Some(addr) =
                line.strip_prefix("gantry: serving a3s.code.agent.v1.CodeAgentService on ")
            {
                break addr.to_owned();
            }
        };
        Server {
            child,
            addr,
            stderr: rx,
        }
    }

    async fn client(&self) -> CodeAgentServiceClient<Channel> {
        CodeAgentServiceClient::connect(format!("http://{}", self.addr))
            .await
            .expect("connect")
    }

    /// Waits for the process to exit; its exit status and remaining stderr.
    fn wait(mut self) -> (std::process::ExitStatus, String) {
        let status = self.child.wait().expect("wait");
        // Up to the end of the stream: the reader thread may still hold the
        // last lines when the process is gone.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut rest = Vec::new();
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match self.stderr.recv_timeout(left) {
                Ok(line) => rest.push(line),
                Err(_) => break,
            }
        }
        (status, rest.join("\n"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_rpcs_health_and_the_shutdown_rpc() {
    let scratch = Scratch::new();
    // `Shutdown` stops this one (by default it only shuts the agent down).
    let server = Server::start(&scratch, &["--exit-on-shutdown"]);
    let mut client = server.client().await;

    // Not initialized yet, and it says so (degraded, as A3S's server says).
    let health = client
        .health_check(pb::HealthCheckRequest {})
        .await
        .expect("health")
        .into_inner();
    assert_eq!(health.status(), Health::Degraded);
    assert!(health.message.contains("not initialized"), "{health:?}");

    // A workspace that does not exist is refused, naming the field.
    let err = client
        .initialize(pb::InitializeRequest {
            workspace: "/no/such/dir".into(),
            env: Default::default(),
        })
        .await
        .expect_err("bad workspace");
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(err.message().starts_with("workspace:"), "{err:?}");

    let ws = scratch.workspace();
    let init = client
        .initialize(pb::InitializeRequest {
            workspace: ws.to_string_lossy().into_owned(),
            env: Default::default(),
        })
        .await
        .expect("initialize")
        .into_inner();
    assert!(init.success);
    assert_eq!(init.info.expect("info").name, "gantry");
    let health = client
        .health_check(pb::HealthCheckRequest {})
        .await
        .expect("health")
        .into_inner();
    assert_eq!(health.status(), Health::Healthy);
    assert_eq!(health.details.get("store").map(String::as_str), Some("ok"));

    // Capabilities are the real tools (by A3S's names), with their
    // parameters, and models.
    let caps = client
        .get_capabilities(pb::GetCapabilitiesRequest {})
        .await
        .expect("capabilities")
        .into_inner();
    let shell = caps
        .tools
        .iter()
        .find(|t| t.name == "bash")
        .expect("the shell tool");
    assert!(shell.parameters.iter().any(|p| p == "command"), "{shell:?}");
    assert!(caps.tools.iter().any(|t| t.name == "edit"));
    assert!(!caps.models.is_empty());
    assert!(caps.features.iter().any(|f| f == "streaming"));

    // The standard health service answers too.
    let mut health = tonic_health::pb::health_client::HealthClient::new(
        Channel::from_shared(format!("http://{}", server.addr))
            .expect("uri")
            .connect()
            .await
            .expect("connect"),
    );
    let serving = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "a3s.code.agent.v1.CodeAgentService".into(),
        })
        .await
        .expect("grpc health")
        .into_inner();
    assert_eq!(
        serving.status(),
        tonic_health::pb::health_check_response::ServingStatus::Serving
    );

    // `Shutdown` answers, then (with --exit-on-shutdown) the process stops cleanly.
    let bye = client
        .shutdown(pb::ShutdownRequest {})
        .await
        .expect("shutdown")
        .into_inner();
    assert!(bye.success);
    drop(client);
    drop(health);
    let (status, stderr) = server.wait();
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(stderr.contains("gantry: stopped"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_is_required_when_configured_and_sigterm_stops_the_server() {
    let scratch = Scratch::new();
    let token_file = scratch.dir.path().join("token");
    std::fs::write(&token_file, "s3cret\n").expect("token");
    let server = Server::start(
        &scratch,
        &[
            "--auth-token-file",
            token_file.to_str().expect("utf-8 path"),
        ],
    );
    let mut client = server.client().await;
    let err = client
        .health_check(pb::HealthCheckRequest {})
        .await
        .expect_err("no token");
    assert_eq!(err.code(), tonic::Code::Unauthenticated);

    let mut request = tonic::Request::new(pb::HealthCheckRequest {});
    request
        .metadata_mut()
        .insert("authorization", "Bearer wrong".parse().expect("ascii"));
    let err = client.health_check(request).await.expect_err("bad token");
    assert_eq!(err.code(), tonic::Code::Unauthenticated);

    let mut request = tonic::Request::new(pb::HealthCheckRequest {});
    request
        .metadata_mut()
        .insert("authorization", "Bearer s3cret".parse().expect("ascii"));
    client.health_check(request).await.expect("authorized");

    let pid = nix::unistd::Pid::from_raw(i32::try_from(server.child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    drop(client);
    let (status, stderr) = server.wait();
    assert!(status.success(), "{status:?}: {stderr}");
}

#[test]
fn bad_serve_flags_fail_before_listening() {
    let scratch = Scratch::new();
    let empty = scratch.dir.path().join("empty-token");
    std::fs::write(&empty, "\n").expect("token");
    let out = scratch.run(&[
        "serve",
        "--listen-addr",
        "127.0.0.1:0",
        "--auth-token-file",
        empty.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is empty"), "{stderr}");

    let out = scratch.run(&["serve", "--listen-addr", "not-an-address"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot listen on not-an-address"),
        "{stderr}"
    );
}

//! TLS as README.md promises it, against the real binaries, with a private
//! CA made at test time by `openssl`:
//!
//! - `gantry serve --tls-cert --tls-key` (with `--auth-token-file`, as the
//!   README's example runs it) serves a client Gantry did not write, Python
//!   grpcio trusting the CA, and no client that does not trust it or that
//!   speaks plaintext.
//! - `gantry runner` dials an `https://` control plane on a host that is not
//!   loopback over TLS, trusting a private CA given with `--tls-ca` (and not
//!   without it), and `https://` on a loopback host as plaintext. The
//!   control plane serves plaintext gRPC only, so TLS is terminated by a
//!   proxy in the test, as a reverse proxy would in front of it.

use crate::common;

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::Scratch;
use serde_json::Value;

/// Longest wait for anything a process should do.
const GUARD: Duration = Duration::from_secs(30);

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lines of a child's stream, read on a thread.
fn lines(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// The first line containing `needle`, within [`GUARD`].
fn wait_line(lines: &mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = Instant::now() + GUARD;
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    panic!("no line with {needle:?}; got {seen:?}");
}

/// A private CA and a server certificate it issued, as PEM files.
struct Pki {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

impl Pki {
    /// Makes a CA and a server certificate for `san` (openssl's
    /// `subjectAltName` syntax, e.g. `DNS:localhost,IP:127.0.0.1`) in `dir`.
    fn issue(dir: &Path, san: &str) -> Pki {
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .unwrap_or_else(|e| panic!("openssl is needed for the TLS tests: {e}"));
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
        openssl(
            &[
                &["req", "-x509", "-nodes", "-days", "2"][..],
                &ec,
                &["-keyout", "ca.key", "-out", "ca.pem"],
                &["-subj", "/CN=Gantry test CA"],
                &["-addext", "basicConstraints=critical,CA:TRUE"],
                &["-addext", "keyUsage=critical,keyCertSign,cRLSign"],
            ]
            .concat(),
        );
        openssl(
            &[
                &["req", "-nodes"][..],
                &ec,
                &["-keyout", "server.key", "-out", "server.csr"],
                &["-subj", "/CN=gantry test server"],
            ]
            .concat(),
        );
        std::fs::write(
            dir.join("server.ext"),
            format!(
                "subjectAltName={san}\nbasicConstraints=critical,CA:FALSE\n\
                 keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
            ),
        )
        .expect("write server.ext");
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-set_serial",
            "2",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ]);
        Pki {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
        }
    }
}

/// A grpcio client: `grpc.health.v1.Health/Check` and the service's own
/// `HealthCheck` (with and without the token) over TLS trusting the CA, the
/// health check over TLS trusting only grpcio's default roots, and over
/// plaintext. Prints each outcome as JSON. Messages are hand-encoded
/// protobuf, so no generated stubs are needed.
const PY_CLIENT: &str = r#"
import json, sys
import grpc

addr, ca_path, token = sys.argv[1], sys.argv[2], sys.argv[3]
service = b"a3s.code.agent.v1.CodeAgentService"
# HealthCheckRequest{service}: field 1, length-delimited.
health_request = b"\x0a" + bytes([len(service)]) + service
options = [("grpc.enable_http_proxy", 0)]

def call(channel, method, request, metadata=None):
    rpc = channel.unary_unary(method)
    try:
        reply = rpc(request, timeout=20, metadata=metadata)
        return {"ok": True, "reply": reply.hex()}
    except grpc.RpcError as e:
        return {"ok": False, "code": e.code().name, "details": e.details()}
    finally:
        channel.close()

with open(ca_path, "rb") as f:
    trusted = grpc.ssl_channel_credentials(root_certificates=f.read())
out = {
    "health": call(grpc.secure_channel(addr, trusted, options), "/grpc.health.v1.Health/Check", health_request),
    "with_token": call(grpc.secure_channel(addr, trusted, options), "/a3s.code.agent.v1.CodeAgentService/HealthCheck", b"",
                       metadata=[("authorization", "Bearer " + token)]),
    "without_token": call(grpc.secure_channel(addr, trusted, options), "/a3s.code.agent.v1.CodeAgentService/HealthCheck", b""),
    "untrusted": call(grpc.secure_channel(addr, grpc.ssl_channel_credentials(), options), "/grpc.health.v1.Health/Check", health_request),
    "plaintext": call(grpc.insecure_channel(addr, options), "/grpc.health.v1.Health/Check", health_request),
}
print(json.dumps(out))
"#;

#[test]
fn serve_with_tls_answers_a_client_that_trusts_its_ca_and_no_plaintext_client() {
    let s = Scratch::new();
    let pki = Pki::issue(s.dir.path(), "DNS:localhost,IP:127.0.0.1");
    let token_file = s.dir.path().join("token.txt");
    std::fs::write(&token_file, "s3cret\n").expect("token");
    let mut child = s
        .gantry()
        .args(["serve", "--listen-addr", "127.0.0.1:0"])
        .args(["--storage-backend", "memory", "--auth-token-file"])
        .arg(&token_file)
        .arg("--tls-cert")
        .arg(&pki.cert)
        .arg("--tls-key")
        .arg(&pki.key)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn gantry serve");
    let stderr = lines(child.stderr.take().expect("stderr"));
    let _server = Proc(child);
    let line = wait_line(
        &stderr,
        "gantry: serving a3s.code.agent.v1.CodeAgentService on ",
    );
    let addr = line.rsplit(' ').next().expect("address");

    let python = std::env::var("GANTRY_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(&python)
        .args(["-c", PY_CLIENT, addr])
        .arg(&pki.ca)
        .arg("s3cret")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python} (with grpcio): {e}"));
    assert!(
        out.status.success(),
        "the grpcio client failed (is grpcio installed? .ci/run installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).expect("the client's JSON");

    // HealthCheckResponse{status: SERVING}: field 1, varint 1.
    assert_eq!(
        got["health"],
        serde_json::json!({"ok": true, "reply": "0801"}),
        "grpc health over TLS, trusting the CA: {got:#}"
    );
    // The token still counts over TLS.
    assert_eq!(got["with_token"]["ok"], true, "{got:#}");
    assert_eq!(got["without_token"]["code"], "UNAUTHENTICATED", "{got:#}");
    // A client that does not trust the CA, and one that speaks plaintext,
    // get no answer.
    assert_eq!(got["untrusted"]["code"], "UNAVAILABLE", "{got:#}");
    assert_eq!(got["plaintext"]["code"], "UNAVAILABLE", "{got:#}");
}

/// `gantry` with a bare home, logging at `info` (the runner says when it
/// connects).
fn gantry(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gantry"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("GANTRY_LOG", "info")
        .stdin(Stdio::null());
    cmd
}

/// This machine's address on the route out: not loopback, so a runner
/// dialing it by `https://` must speak TLS. Nothing is sent.
fn non_loopback_ip() -> Option<IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    // TEST-NET-3: a route lookup only.
    socket.connect("203.0.113.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// A TLS acceptor with `pki`'s server certificate, offering ALPN `h2` (as
/// gRPC clients ask).
fn tls_acceptor(pki: &Pki) -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let chain = std::fs::read(&pki.cert).expect("server.pem");
    let key = std::fs::read(&pki.key).expect("server.key");
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&chain)
        .collect::<Result<_, _>>()
        .expect("certificate PEM");
    let key = PrivateKeyDer::from_pem_slice(&key).expect("key PEM");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server certificate");
    config.alpn_protocols = vec![b"h2".to_vec()];
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// Terminates TLS on `listener` and forwards the bytes to `upstream`, as a
/// reverse proxy would; counts completed handshakes.
async fn tls_proxy(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    upstream: SocketAddr,
    handshakes: Arc<AtomicUsize>,
) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            return;
        };
        let acceptor = acceptor.clone();
        let handshakes = handshakes.clone();
        tokio::spawn(async move {
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                return;
            };
            handshakes.fetch_add(1, Ordering::SeqCst);
            let Ok(mut plain) = tokio::net::TcpStream::connect(upstream).await else {
                return;
            };
            let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
        });
    }
}

/// `GET http://{http}/v1/runners`: each runner's name and whether it is
/// connected.
fn runners(runtime: &tokio::runtime::Runtime, http: &str) -> Vec<(String, bool)> {
    // reqwest is built without a crypto provider of its own.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let body: Value = runtime.block_on(async {
        reqwest::get(format!("http://{http}/v1/runners"))
            .await
            .expect("GET /v1/runners")
            .json()
            .await
            .expect("JSON")
    });
    let mut all: Vec<(String, bool)> = body
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default().to_owned(),
                r["connected"] == true,
            )
        })
        .collect();
    all.sort();
    all
}

#[test]
fn a_runner_dials_a_tls_control_plane_trusting_a_private_ca_and_loopback_in_plaintext() {
    let Some(ip) = non_loopback_ip() else {
        eprintln!("skipped: this machine has no address beyond loopback to dial over TLS");
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let pki = Pki::issue(tmp.path(), &format!("IP:{ip}"));
    let cp_data = tmp.path().join("cp");

    // The control plane, plaintext on loopback.
    let mut cp = gantry(&home)
        .args(["control-plane", "serve", "--grpc-listen", "127.0.0.1:0"])
        .args(["--http-listen", "127.0.0.1:0", "--data-dir"])
        .arg(&cp_data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the control plane");
    let cp_log = lines(cp.stderr.take().expect("stderr"));
    let _cp = Proc(cp);
    let line = wait_line(&cp_log, "gantry: control plane gRPC on ");
    let rest = line.split("gRPC on ").nth(1).expect("addresses");
    let (grpc, http) = rest.split_once(", HTTP on ").expect("two addresses");
    let (grpc, http) = (grpc.trim().to_owned(), http.trim().to_owned());

    // TLS in front of it, on this machine's non-loopback address.
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(SocketAddr::new(ip, 0)))
        .expect("bind the TLS proxy");
    let tls_addr = listener.local_addr().expect("proxy address");
    let handshakes = Arc::new(AtomicUsize::new(0));
    let upstream: SocketAddr = grpc.parse().expect("gRPC address");
    runtime.spawn(tls_proxy(
        listener,
        tls_acceptor(&pki),
        upstream,
        handshakes.clone(),
    ));

    // Three runners, each with its own token and data dir.
    let start_runner = |name: &str, url: &str, ca: Option<&Path>| {
        let out = gantry(&home)
            .args(["control-plane", "add-runner", name, "--data-dir"])
            .arg(&cp_data)
            .output()
            .expect("add-runner");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let token = tmp.path().join(format!("{name}.token"));
        std::fs::write(&token, &out.stdout).expect("token file");
        let mut cmd = gantry(&home);
        cmd.args(["runner", "--control-plane", url, "--token-file"])
            .arg(&token)
            .arg("--data-dir")
            .arg(tmp.path().join(name));
        if let Some(ca) = ca {
            cmd.arg("--tls-ca").arg(ca);
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn a runner");
        let log = lines(child.stderr.take().expect("stderr"));
        (Proc(child), log)
    };
    let remote = format!("https://{tls_addr}");
    let (_trusting, trusting_log) = start_runner("trusting", &remote, Some(&pki.ca));
    let (_untrusting, untrusting_log) = start_runner("untrusting", &remote, None);
    let (_loopback, loopback_log) = start_runner("loopback", &format!("https://{grpc}"), None);

    // With --tls-ca the runner completes the handshake and registers.
    wait_line(&trusting_log, "control plane: connected");
    assert!(handshakes.load(Ordering::SeqCst) >= 1, "it came over TLS");
    // Without it, the private CA's certificate is refused: no registration.
    let refused = wait_line(&untrusting_log, "reconnecting");
    assert!(
        refused.contains("certificate"),
        "the runner says why: {refused}"
    );
    // `https://` to a loopback host is plaintext: the plaintext port serves it.
    wait_line(&loopback_log, "control plane: connected");

    assert_eq!(
        runners(&runtime, &http),
        [
            ("loopback".to_owned(), true),
            ("trusting".to_owned(), true),
            ("untrusting".to_owned(), false),
        ]
    );
}

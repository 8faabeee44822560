//! Every HTTP listener of `gantry serve` (the HTTP API and its dashboard,
//! CodeWhale 0.8.59 and 0.10, Rome) refuses what a web page can send, token or not: a page
//! whose domain was rebound to 127.0.0.1 names its own domain in `Host`,
//! and any page names its own origin in `Origin`. And a client that may
//! call cannot widen the server's safety: a sandbox looser than
//! `--max-sandbox`, a Rome `workingDir` outside the workspace, a provider
//! re-pointed without the operator's token.
//!
//! The requests are curl's, a client Gantry did not write.

use std::process::Child;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Scratch, spawn_announcing};

/// A running `gantry serve` with its three HTTP listeners' addresses.
struct Served {
    child: Child,
    http: String,
    codewhale: String,
    codewhale10: String,
    rome: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `gantry serve` with every HTTP listener on a free loopback port; with
/// `tokens`, CodeWhale's and Rome's token files hold `secret` and the HTTP
/// API has a token named `t` (written to `http.token`).
fn serve(scratch: &Scratch, tokens: bool) -> Served {
    let mut cmd = scratch.gantry();
    cmd.args(["serve", "--listen-addr", "127.0.0.1:0"])
        .args(["--storage-backend", "memory"])
        .args(["--http-addr", "127.0.0.1:0"])
        .args(["--codewhale-addr", "127.0.0.1:0"])
        .args(["--codewhale10-addr", "127.0.0.1:0"])
        .args(["--rome-addr", "127.0.0.1:0"]);
    if tokens {
        let made = scratch.run(&["tokens", "create", "--name", "t"]);
        assert!(made.status.success(), "{made:?}");
        let token = String::from_utf8_lossy(&made.stdout).trim().to_owned();
        std::fs::write(scratch.dir.path().join("http.token"), token).expect("write");
        let file = scratch.dir.path().join("listener.token");
        std::fs::write(&file, "secret\n").expect("write");
        cmd.arg("--codewhale-token-file")
            .arg(&file)
            .arg("--rome-token-file")
            .arg(&file);
    }
    let (child, said) = spawn_announcing(
        cmd,
        &[
            "gantry: serving the HTTP API and dashboard on http://",
            "gantry: serving CodeWhale HTTP on ",
            "gantry: serving CodeWhale 0.10 HTTP on ",
            "gantry: serving the Rome agent runner on ",
        ],
    );
    Served {
        child,
        http: said[0].trim_end_matches('/').to_owned(),
        codewhale: said[1].clone(),
        codewhale10: said[2].clone(),
        rome: said[3].clone(),
    }
}

/// curl's answer: status and body.
fn curl(method: &str, url: &str, headers: &[String], body: Option<&Value>) -> (u16, String) {
    let mut cmd = std::process::Command::new("curl");
    cmd.args([
        "-sS",
        "--max-time",
        "30",
        "-X",
        method,
        "-w",
        "\n%{http_code}",
    ]);
    for header in headers {
        cmd.args(["-H", header]);
    }
    if let Some(body) = body {
        cmd.args(["-H", "Content-Type: application/json", "--data-binary"])
            .arg(body.to_string());
    }
    let out = cmd.arg(url).output().expect("curl runs");
    assert!(out.status.success(), "curl: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').expect("status line");
    (code.trim().parse().expect("status"), body.to_owned())
}

/// Sends `request` as it is and reads the whole answer.
fn raw(addr: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let mut tcp = std::net::TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    tcp.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    let _ = tcp.read_to_string(&mut answer);
    answer
}

/// One request a page would like to make of each listener, with the
/// headers a legitimate client sends (its token, when there are tokens).
fn requests(
    s: &Served,
    scratch: &Scratch,
    tokens: bool,
) -> Vec<(&'static str, String, Vec<String>, Option<Value>)> {
    let http_auth: Vec<String> = if tokens {
        let token = std::fs::read_to_string(scratch.dir.path().join("http.token")).expect("token");
        vec![format!("Authorization: Bearer {}", token.trim())]
    } else {
        Vec::new()
    };
    let auth: Vec<String> = if tokens {
        vec!["Authorization: Bearer secret".to_owned()]
    } else {
        Vec::new()
    };
    vec![
        (
            "POST",
            format!("http://{}/v1/threads", s.http),
            http_auth.clone(),
            Some(json!({})),
        ),
        (
            "GET",
            format!("http://{}/v1/threads", s.http),
            http_auth.clone(),
            None,
        ),
        ("GET", format!("http://{}/", s.http), http_auth, None),
        (
            "POST",
            format!("http://{}/thread", s.codewhale),
            auth.clone(),
            Some(json!({"kind": "create"})),
        ),
        (
            "GET",
            format!("http://{}/healthz", s.codewhale),
            auth.clone(),
            None,
        ),
        (
            "POST",
            format!("http://{}/thread", s.codewhale10),
            auth.clone(),
            Some(json!({"kind": "start", "operation_key": "page"})),
        ),
        (
            "GET",
            format!("http://{}/healthz", s.codewhale10),
            auth.clone(),
            None,
        ),
        (
            "GET",
            format!("http://{}/v1/rome/agents/main", s.rome),
            auth.clone(),
            None,
        ),
        ("GET", format!("http://{}/healthz", s.rome), auth, None),
    ]
}

fn a_rebound_page_reaches_no_listener(tokens: bool) {
    let scratch = Scratch::new();
    let s = serve(&scratch, tokens);
    for (method, url, auth, body) in requests(&s, &scratch, tokens) {
        // What a legitimate client sends passes the guard (so the
        // refusals below are about the page, not the request; an agent the
        // server does not have is a 404 of the route).
        let (ok, answer) = curl(method, &url, &auth, body.as_ref());
        assert!(
            !matches!(ok, 400 | 401 | 403 | 421),
            "{method} {url}: {ok} {answer}"
        );

        // A rebound page: its own name in Host, its own origin.
        let mut page = auth.clone();
        page.push("Host: evil.example".to_owned());
        page.push("Origin: http://evil.example".to_owned());
        let (status, answer) = curl(method, &url, &page, body.as_ref());
        assert_eq!(status, 421, "{method} {url} with a rebound Host: {answer}");
        assert!(answer.contains("evil.example"), "{answer}");

        // Any other page, through the right host: its Origin is refused.
        let mut other = auth.clone();
        other.push("Origin: http://evil.example".to_owned());
        let (status, answer) = curl(method, &url, &other, body.as_ref());
        assert_eq!(status, 403, "{method} {url} from another origin: {answer}");

        // Two Host headers (curl sends one: these are raw bytes): which
        // one a proxy in front read is unknown.
        let (addr, path) = url
            .trim_start_matches("http://")
            .split_once('/')
            .expect("a path");
        let mut request =
            format!("{method} /{path} HTTP/1.1\r\nHost: {addr}\r\nHost: evil.example\r\n");
        for header in &auth {
            request.push_str(&format!("{header}\r\n"));
        }
        request.push_str("Connection: close\r\nContent-Length: 0\r\n\r\n");
        let answer = raw(addr, &request);
        assert!(
            answer.starts_with("HTTP/1.1 400"),
            "{method} {url} with two Hosts: {answer}"
        );
    }
}

#[test]
fn a_rebound_page_reaches_no_listener_without_tokens() {
    a_rebound_page_reaches_no_listener(false);
}

#[test]
fn a_rebound_page_reaches_no_listener_with_tokens() {
    a_rebound_page_reaches_no_listener(true);
}

#[test]
fn a_token_is_compared_exactly() {
    let scratch = Scratch::new();
    let s = serve(&scratch, true);
    for addr in [&s.codewhale, &s.codewhale10, &s.rome] {
        let url = format!("http://{addr}/thread");
        // A trailing space is no part of the value (RFC 9110 5.5: the
        // parser drops whitespace around a field value), so not here.
        for sent in [
            "Bearer secre",
            "Bearer secret x",
            "Bearer  secret",
            "bearer secret",
        ] {
            // Raw bytes: curl might tidy the header.
            let request = format!(
                "POST /thread HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {sent}\r\n\
                 Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
            );
            let answer = raw(addr, &request);
            assert!(
                answer.starts_with("HTTP/1.1 401"),
                "{url} with {sent:?}: {answer}"
            );
        }
    }
}

#[test]
fn a_request_without_a_token_or_with_a_text_body_is_refused() {
    let scratch = Scratch::new();
    let s = serve(&scratch, true);
    let http_token = std::fs::read_to_string(scratch.dir.path().join("http.token")).expect("token");
    let listeners = [
        (
            format!("http://{}/v1/threads", s.http),
            http_token.trim().to_owned(),
        ),
        (
            format!("http://{}/thread", s.codewhale),
            "secret".to_owned(),
        ),
        (
            format!("http://{}/thread", s.codewhale10),
            "secret".to_owned(),
        ),
        (
            format!("http://{}/v1/rome/run", s.rome),
            "secret".to_owned(),
        ),
    ];
    for (url, token) in &listeners {
        // No token at all: what a page without one sends.
        let (status, answer) = curl("POST", url, &[], Some(&json!({})));
        assert_eq!(status, 401, "{url} without a token: {answer}");
        // With the token, a body a page may post cross-origin without
        // asking first (text/plain) is not taken.
        let out = std::process::Command::new("curl")
            .args([
                "-sS",
                "--max-time",
                "30",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
            ])
            .args(["-H", &format!("Authorization: Bearer {token}")])
            .args(["-H", "Content-Type: text/plain", "--data-binary", "{}"])
            .arg(url)
            .output()
            .expect("curl runs");
        let status = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(status, "415", "{url} with a text/plain body");
    }
    // Over HTTP/2 cleartext (which the server speaks) a body needs no
    // length header: one of unknown length is still a body, and must be
    // JSON. The body stays open until the answer is in, so the refusal is
    // proven to come before the server read it (and curl's race between
    // its upload and the server's reset of the stream is not ours).
    let (url, token) = &listeners[0];
    let status = h2_text_post_of_unknown_length(url, token);
    assert_eq!(status, 415, "an HTTP/2 text/plain body of unknown length");
}

/// The status of an HTTP/2 (prior knowledge) `POST` to `url` of a
/// `text/plain` body without a length, which sends `{}` and then stays
/// open until the answer arrives.
fn h2_text_post_of_unknown_length(url: &str, token: &str) -> u16 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (answered, rest) = tokio::sync::oneshot::channel::<()>();
        let first = futures_util::stream::once(async {
            Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"{}"))
        });
        // Ends (with nothing more) only once the answer is in.
        let tail = futures_util::stream::once(async move {
            let _ = rest.await;
            Ok::<_, std::io::Error>(bytes::Bytes::new())
        });
        let body = reqwest::Body::wrap_stream(futures_util::StreamExt::chain(first, tail));
        // reqwest is built without a crypto provider (none is used on http).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .http2_prior_knowledge()
            .build()
            .expect("a client");
        let answer = tokio::time::timeout(
            Duration::from_secs(30),
            client
                .post(url)
                .bearer_auth(token)
                .header("Content-Type", "text/plain")
                .body(body)
                .send(),
        )
        .await
        .expect("an answer before the body ends")
        .expect("an HTTP/2 answer");
        let _ = answered.send(());
        answer.status().as_u16()
    })
}

#[test]
fn a_client_cannot_widen_the_servers_safety() {
    let scratch = Scratch::new();
    let s = serve(&scratch, false);
    let workspace = std::fs::canonicalize(scratch.workspace()).expect("workspace");

    // A sandbox looser than --max-sandbox (workspace-write by default).
    let (status, answer) = curl(
        "POST",
        &format!("http://{}/thread", s.codewhale),
        &[],
        Some(
            &json!({"kind": "start", "sandbox": "danger-full-access", "approval_policy": "never"}),
        ),
    );
    assert!(
        answer.contains("looser than this server allows"),
        "{status} {answer}"
    );
    let (status, answer) = curl(
        "POST",
        &format!("http://{}/thread", s.codewhale10),
        &[],
        Some(&json!({"kind": "start", "operation_key": "wide", "sandbox": "danger-full-access"})),
    );
    assert_eq!(status, 503, "{answer}");
    assert!(
        answer.contains("looser than this server allows"),
        "{answer}"
    );
    let (status, answer) = curl(
        "POST",
        &format!("http://{}/app", s.codewhale),
        &[],
        Some(&json!({"kind": "config_set", "key": "sandbox_mode", "value": "danger-full-access"})),
    );
    assert!(
        answer.contains("looser than this server allows"),
        "{status} {answer}"
    );
    let (status, answer) = curl(
        "POST",
        &format!("http://{}/v1/threads", s.http),
        &[],
        Some(&json!({"policy": {"sandbox": "danger-full-access"}})),
    );
    assert_eq!(status, 422, "{answer}");
    assert!(answer.contains(r#""field":"policy""#), "{answer}");
    assert!(
        answer.contains("looser than this server allows"),
        "{answer}"
    );
    // Within the ceiling is fine.
    let (status, answer) = curl(
        "POST",
        &format!("http://{}/thread", s.codewhale),
        &[],
        Some(&json!({"kind": "start", "sandbox": "read-only"})),
    );
    assert!(
        status < 400 && !answer.contains("error"),
        "{status} {answer}"
    );

    // A provider re-pointed (its key sent elsewhere) without a token.
    let (status, answer) = curl(
        "POST",
        &format!("http://{}/app", s.codewhale),
        &[],
        Some(
            &json!({"kind": "config_set", "key": "providers.openai.base_url", "value": "http://evil.example/v1"}),
        ),
    );
    assert!(
        answer.contains("providers cannot be changed"),
        "{status} {answer}"
    );

    // Rome: the agent pointed at the whole machine.
    let (status, answer) = curl(
        "POST",
        &format!("http://{}/v1/rome/run", s.rome),
        &[],
        Some(&json!({"agentName": "main", "prompt": "hi", "workingDir": "/"})),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer.contains("outside this runner's workspace"),
        "{answer}"
    );
    assert!(
        answer.contains(&workspace.display().to_string()),
        "{answer}"
    );
}

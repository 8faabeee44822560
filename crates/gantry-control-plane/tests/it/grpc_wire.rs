//! What reaches the control plane's gRPC server off the wire, and the
//! runner protocol's decoders under arbitrary bytes.

use crate::support;

use std::future::poll_fn;

use bytes::Bytes;
use gantry_runner_protocol::v0_2 as pb;
use gantry_runner_protocol::validate::Validate;
use http_body_util::BodyExt;
use proptest::prelude::*;
use prost::Message;
use support::Harness;
use tonic::Code;
use tonic::body::Body;
use tonic::transport::Channel;
use tower_service::Service;

const SERVICE: &str = "/companyhelm.runner.v1.AgentRunnerControlService/";

/// The HTTP status, and the gRPC status and message of a raw call.
#[derive(Debug)]
struct Answer {
    http: http::StatusCode,
    grpc: Option<i32>,
    message: String,
}

fn framed(messages: &[&[u8]]) -> Vec<u8> {
    let mut wire = Vec::new();
    for m in messages {
        wire.push(0);
        wire.extend_from_slice(&u32::try_from(m.len()).expect("small").to_be_bytes());
        wire.extend_from_slice(m);
    }
    wire
}

/// POSTs `body` to `method` with `content_type` and the runner `token`.
async fn call(
    channel: &mut Channel,
    method: &str,
    content_type: &str,
    token: &str,
    body: Vec<u8>,
) -> Answer {
    let request = http::Request::post(format!("{SERVICE}{method}"))
        .header("content-type", content_type)
        .header("te", "trailers")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::new(http_body_util::Full::new(Bytes::from(body))))
        .expect("request");
    poll_fn(|cx| channel.poll_ready(cx)).await.expect("ready");
    let response = channel.call(request).await.expect("an HTTP answer");
    let (parts, body) = response.into_parts();
    let collected = body.collect().await.expect("the body");
    let trailers = collected.trailers().cloned().unwrap_or_default();
    let find = |name: &str| {
        parts
            .headers
            .get(name)
            .or_else(|| trailers.get(name))
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    Answer {
        http: parts.status,
        grpc: find("grpc-status").and_then(|s| s.parse().ok()),
        message: find("grpc-message").unwrap_or_default(),
    }
}

async fn channel(h: &Harness) -> Channel {
    Channel::from_shared(format!("http://{}", h.grpc))
        .expect("uri")
        .connect()
        .await
        .expect("connect")
}

/// A registration that passes validation, encoded.
fn registration() -> Vec<u8> {
    pb::RegisterRunnerRequest {
        agent_sdks: vec![pb::AgentSdk {
            name: "gantry".into(),
            models: Vec::new(),
        }],
    }
    .encode_to_vec()
}

#[tokio::test]
async fn the_control_plane_refuses_what_is_not_grpc_and_unary_calls_with_two_messages() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), std::time::Duration::from_secs(5)).await;
    let (_, token) = h.add_runner("r1").await;
    let mut ch = channel(&h).await;
    let one = framed(&[&registration()]);

    let plain = call(&mut ch, "RegisterRunner", "text/plain", &token, one.clone()).await;
    assert_eq!(
        plain.http,
        http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "{plain:?}"
    );
    let served = call(&mut ch, "RegisterRunner", "application/grpc", &token, one).await;
    assert_eq!(served.grpc, Some(0), "{served:?}");

    let two = framed(&[&registration(), &registration()]);
    let refused = call(&mut ch, "RegisterRunner", "application/grpc", &token, two).await;
    assert_eq!(
        refused.grpc,
        Some(Code::InvalidArgument as i32),
        "{refused:?}"
    );

    // Field 1 (`agent_sdks`) holding an AgentSdk whose name is not UTF-8.
    let bad_utf8: &[u8] = &[0x0a, 0x04, 0x0a, 0x02, 0xff, 0xfe];
    let malformed = framed(&[bad_utf8]);
    let refused = call(
        &mut ch,
        "RegisterRunner",
        "application/grpc",
        &token,
        malformed,
    )
    .await;
    assert_eq!(
        refused.grpc,
        Some(Code::InvalidArgument as i32),
        "{refused:?}"
    );
    h.stop().await;
}

const UNARY: &[&str] = &[
    "RegisterRunner",
    "ListGithubInstallationsForRunner",
    "GetGithubInstallationAccessTokenForRunner",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The runner decodes and validates every message the control plane
    /// sends; the control plane every message a runner sends. Neither
    /// panics on any bytes.
    #[test]
    fn the_runner_protocol_decoders_take_any_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        if let Ok(message) = pb::ServerMessage::decode(bytes.as_slice()) {
            let _ = message.validate();
        }
        if let Ok(message) = pb::ClientMessage::decode(bytes.as_slice()) {
            let _ = message.validate();
        }
        if let Ok(message) = pb::RegisterRunnerRequest::decode(bytes.as_slice()) {
            let _ = message.validate();
        }
        if let Ok(message) = pb::GetGithubInstallationAccessTokenForRunnerRequest::decode(bytes.as_slice()) {
            let _ = message.validate();
        }
        if let Ok(message) = pb::GetGithubInstallationAccessTokenForRunnerResponse::decode(bytes.as_slice()) {
            let _ = message.validate();
        }
        if let Ok(message) = pb::ListGithubInstallationsForRunnerResponse::decode(bytes.as_slice()) {
            let _ = message.validate();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Arbitrary bytes as the one message of a runner's call get a status,
    /// never INTERNAL (nor a dropped connection, as a panic would).
    #[test]
    fn arbitrary_bytes_get_a_clean_answer_from_the_control_plane(
        method in proptest::sample::select(UNARY),
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let answer = runtime().block_on(async {
            let (ch, token) = plane().await;
            let mut ch = ch.lock().await;
            call(&mut ch, method, "application/grpc", token, framed(&[&bytes])).await
        });
        prop_assert_eq!(answer.http, http::StatusCode::OK);
        let code = answer.grpc.map(Code::from);
        prop_assert!(code.is_some(), "{}: no status", method);
        prop_assert_ne!(code, Some(Code::Internal), "{}: {}", method, answer.message);
        prop_assert_ne!(code, Some(Code::Unknown), "{}: {}", method, answer.message);
    }
}

/// One runtime for every proptest case: the control plane lives on it.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    })
}

/// The control plane every case calls, started once: a channel to it and
/// a runner's token.
async fn plane() -> (&'static tokio::sync::Mutex<Channel>, &'static str) {
    static PLANE: tokio::sync::OnceCell<(tokio::sync::Mutex<Channel>, String)> =
        tokio::sync::OnceCell::const_new();
    let (ch, token) = PLANE
        .get_or_init(|| async {
            let dir = tempfile::tempdir().expect("tempdir");
            let h = Harness::start(dir.path(), std::time::Duration::from_secs(5)).await;
            let (_, token) = h.add_runner("fuzz").await;
            let ch = channel(&h).await;
            // Both serve for the rest of the test process.
            std::mem::forget(h);
            std::mem::forget(dir);
            (tokio::sync::Mutex::new(ch), token)
        })
        .await;
    (ch, token)
}

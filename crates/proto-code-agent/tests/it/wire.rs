//! What reaches the server off the wire: only gRPC with protobuf, one
//! message for a unary call, malformed messages refused as the client's
//! fault, and error messages that do not echo a huge input back.

use crate::common;

use std::future::poll_fn;

use bytes::Bytes;
use common::Server;
use http_body_util::BodyExt;
use proptest::prelude::*;
use proto_code_agent::pb;
use tonic::Code;
use tonic::body::Body;
use tonic::transport::Channel;
use tower_service::Service;

const SERVICE: &str = "/a3s.code.agent.v1.CodeAgentService/";

/// What a raw call got back: the HTTP status, and the gRPC status and
/// message from the headers (trailers-only) or the trailers.
#[derive(Debug)]
struct Answer {
    http: http::StatusCode,
    grpc: Option<i32>,
    message: String,
}

/// `body` framed as gRPC messages.
fn framed(messages: &[&[u8]]) -> Vec<u8> {
    let mut wire = Vec::new();
    for m in messages {
        wire.push(0);
        wire.extend_from_slice(&u32::try_from(m.len()).expect("small").to_be_bytes());
        wire.extend_from_slice(m);
    }
    wire
}

/// POSTs `body` to `method` with `content_type`, as a raw HTTP/2 request.
async fn call(channel: &mut Channel, method: &str, content_type: &str, body: Vec<u8>) -> Answer {
    let request = http::Request::post(format!("{SERVICE}{method}"))
        .header("content-type", content_type)
        .header("te", "trailers")
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

async fn channel(s: &Server) -> Channel {
    Channel::from_shared(format!("http://{}", s.addr))
        .expect("uri")
        .connect()
        .await
        .expect("connect")
}

#[tokio::test]
async fn a_request_that_is_not_grpc_is_refused_with_415() {
    let s = Server::start(vec![]).await;
    let mut ch = channel(&s).await;
    let answer = call(&mut ch, "HealthCheck", "text/plain", framed(&[b""])).await;
    assert_eq!(answer.http, http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(answer.grpc, Some(Code::InvalidArgument as i32));
    // The same call as gRPC is served.
    for content_type in ["application/grpc", "application/grpc+proto"] {
        let answer = call(&mut ch, "HealthCheck", content_type, framed(&[b""])).await;
        assert_eq!(answer.http, http::StatusCode::OK);
        assert_eq!(answer.grpc, Some(0), "{content_type}: {answer:?}");
    }
}

#[tokio::test]
async fn a_unary_call_carrying_two_messages_is_invalid_argument() {
    let s = Server::start(vec![]).await;
    let mut ch = channel(&s).await;
    let answer = call(
        &mut ch,
        "ListSessions",
        "application/grpc",
        framed(&[b"", b""]),
    )
    .await;
    assert_eq!(
        answer.grpc,
        Some(Code::InvalidArgument as i32),
        "{answer:?}"
    );
    assert!(answer.message.contains("more%20than%20one"), "{answer:?}");
}

#[tokio::test]
async fn malformed_protobuf_and_bad_utf8_are_invalid_argument() {
    let s = Server::start(vec![]).await;
    let mut ch = channel(&s).await;
    // Field 1 (`input`, a string) with bytes that are not UTF-8.
    let bad_utf8: &[u8] = &[0x0a, 0x02, 0xff, 0xfe];
    // A length-delimited field claiming more bytes than there are.
    let truncated: &[u8] = &[0x0a, 0x10, b'x'];
    for body in [bad_utf8, truncated] {
        let answer = call(
            &mut ch,
            "ParseCronSchedule",
            "application/grpc",
            framed(&[body]),
        )
        .await;
        assert_eq!(
            answer.grpc,
            Some(Code::InvalidArgument as i32),
            "{answer:?}"
        );
    }
}

#[tokio::test]
async fn a_huge_schedule_is_not_echoed_whole() {
    let mut s = Server::start(vec![]).await;
    let input = "x".repeat(60 * 1024);
    let err = s
        .client
        .parse_cron_schedule(pb::ParseCronScheduleRequest { input })
        .await
        .expect_err("not a schedule");
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().len() < 1_000, "{} bytes", err.message().len());
    assert!(err.message().contains('…'));
}

/// Methods that only read, so arbitrary input changes nothing.
const READERS: &[&str] = &[
    "HealthCheck",
    "GetCapabilities",
    "ListSessions",
    "GetSession",
    "GetMessages",
    "ListSkills",
    "GetContextUsage",
    "GetConfirmationPolicy",
    "GetLaneHandler",
    "ListPendingExternalTasks",
    "GetPermissionPolicy",
    "CheckPermission",
    "GetTodos",
    "ListProviders",
    "GetProvider",
    "GetDefaultModel",
    "GetPlan",
    "RetrieveMemory",
    "SearchMemories",
    "GetMemoryStats",
    "ListMcpServers",
    "GetMcpTools",
    "ListLspServers",
    "ListCronJobs",
    "GetCronJob",
    "GetCronHistory",
    "ParseCronSchedule",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Arbitrary bytes as the one message of a call get an answer with a
    /// status, never INTERNAL (nor a dropped connection, as a panic would).
    #[test]
    fn arbitrary_bytes_get_a_clean_answer(
        method in proptest::sample::select(READERS),
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let answer = runtime().block_on(async {
            let s = server().await;
            let mut ch = s.lock().await;
            call(&mut ch, method, "application/grpc", framed(&[&bytes])).await
        });
        prop_assert_eq!(answer.http, http::StatusCode::OK);
        let code = answer.grpc.map(Code::from);
        prop_assert!(code.is_some(), "{}: no status", method);
        prop_assert_ne!(code, Some(Code::Internal), "{}: {}", method, answer.message);
        prop_assert_ne!(code, Some(Code::Unknown), "{}: {}", method, answer.message);
    }
}

/// One runtime for every proptest case: the server lives on it.
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

/// The server every proptest case calls, started once, and a channel to it.
async fn server() -> &'static tokio::sync::Mutex<Channel> {
    static CHANNEL: tokio::sync::OnceCell<tokio::sync::Mutex<Channel>> =
        tokio::sync::OnceCell::const_new();
    CHANNEL
        .get_or_init(|| async {
            let s = Server::start(vec![]).await;
            let ch = channel(&s).await;
            // Serves for the rest of the test process (a drop would stop it).
            std::mem::forget(s);
            tokio::sync::Mutex::new(ch)
        })
        .await
}

//! The checks a request passes before tonic sees it: it must be gRPC with
//! protobuf, and a method that takes one message must get exactly one.
//! tonic checks neither: it serves a `text/plain` request as gRPC, and its
//! unary path decodes and drops whatever messages follow the first.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body::Frame;
use tonic::Status;
use tonic::body::Body;
use tower_layer::Layer;
use tower_service::Service;

/// Wraps a server's routes in [`Guard`] (`Server::builder().layer(..)`).
#[derive(Debug, Clone, Copy)]
pub struct GuardLayer {
    single_message: &'static [&'static str],
}

impl GuardLayer {
    /// A guard for the methods (`/package.Service/Method`) in
    /// `single_message`: the unary and server-streaming ones, whose request
    /// is one message. Other paths may carry any number of messages.
    pub const fn new(single_message: &'static [&'static str]) -> Self {
        Self { single_message }
    }
}

impl<S> Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            inner,
            single_message: self.single_message,
        }
    }
}

/// Refuses a request that is not `application/grpc` (or `+proto`) with
/// HTTP 415, and makes the body of a single-message call fail with
/// `INVALID_ARGUMENT` when it carries no message, more than one, or ends
/// inside one.
#[derive(Debug, Clone)]
pub struct Guard<S> {
    inner: S,
    single_message: &'static [&'static str],
}

impl<S> Service<http::Request<Body>> for Guard<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let content_type = request.headers().get(header::CONTENT_TYPE);
        if !is_grpc_proto(content_type) {
            let refused = unsupported_media_type(content_type);
            return Box::pin(async move { Ok(refused) });
        }
        let single = self.single_message.contains(&request.uri().path());
        let request = request.map(|body| Body::new(Framed::new(body, single)));
        Box::pin(self.inner.call(request))
    }
}

/// True for `application/grpc` and `application/grpc+proto`, in any case,
/// with or without parameters. (`+json` and other subtypes are refused:
/// the services speak protobuf only.)
fn is_grpc_proto(content_type: Option<&HeaderValue>) -> bool {
    let Some(value) = content_type.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let media_type = value.split(';').next().unwrap_or_default().trim();
    media_type.eq_ignore_ascii_case("application/grpc")
        || media_type.eq_ignore_ascii_case("application/grpc+proto")
}

/// HTTP 415, as the gRPC over HTTP/2 spec asks of a server whose request's
/// content type is not gRPC ("servers SHOULD respond with HTTP status of
/// 415 (Unsupported Media Type)"), so that no HTTP client takes the answer
/// for a success. grpc-go adds `grpc-status` INTERNAL; the fault here is
/// the client's, so the status is `INVALID_ARGUMENT`.
fn unsupported_media_type(content_type: Option<&HeaderValue>) -> http::Response<Body> {
    let given = content_type.map_or_else(
        || "none".to_owned(),
        |v| crate::clip(&String::from_utf8_lossy(v.as_bytes())).into_owned(),
    );
    let mut response = Status::invalid_argument(format!(
        "unsupported content-type `{given}`: use application/grpc or application/grpc+proto"
    ))
    .into_http::<Body>();
    *response.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
    response
}

/// A request body read as gRPC length-prefixed messages (a 5-byte header:
/// a compression flag and a big-endian length; then the message), counted
/// as they pass.
struct Framed {
    inner: Body,
    /// The method takes exactly one message.
    single: bool,
    header: [u8; 5],
    /// Bytes of the current header read so far.
    header_len: usize,
    /// Bytes of the current message still to come.
    message_left: u64,
    /// Messages begun so far.
    messages: u64,
    /// The body ended, or failed.
    done: bool,
}

impl Framed {
    fn new(inner: Body, single: bool) -> Self {
        Self {
            inner,
            single,
            header: [0; 5],
            header_len: 0,
            message_left: 0,
            messages: 0,
            done: false,
        }
    }

    /// Follows the framing through `data`.
    fn scan(&mut self, mut data: &[u8]) -> Result<(), Status> {
        while !data.is_empty() {
            if self.message_left > 0 {
                let skip = usize::try_from(self.message_left)
                    .map_or(data.len(), |left| left.min(data.len()));
                data = &data[skip..];
                self.message_left -= skip as u64;
                continue;
            }
            if self.header_len == 0 {
                self.messages += 1;
                if self.single && self.messages > 1 {
                    // grpc-java answers INTERNAL "Too many requests"
                    // (ServerCalls.UnaryServerCallHandler), and grpc-go
                    // INTERNAL since grpc/grpc-go#8385; both call it a
                    // protocol error. The fault is the client's, as with a
                    // malformed message, hence INVALID_ARGUMENT.
                    return Err(Status::invalid_argument(
                        "more than one request message: this method takes exactly one",
                    ));
                }
            }
            let take = (self.header.len() - self.header_len).min(data.len());
            let (head, rest) = data.split_at(take);
            self.header[self.header_len..self.header_len + take].copy_from_slice(head);
            self.header_len += take;
            data = rest;
            if self.header_len == self.header.len() {
                let [_, a, b, c, d] = self.header;
                self.message_left = u64::from(u32::from_be_bytes([a, b, c, d]));
                self.header_len = 0;
            }
        }
        Ok(())
    }

    /// What the end of the body means for the framing.
    fn finish(&self) -> Result<(), Status> {
        if self.header_len > 0 || self.message_left > 0 {
            return Err(Status::invalid_argument(
                "the request body ends inside a message",
            ));
        }
        if self.single && self.messages == 0 {
            return Err(Status::invalid_argument(
                "no request message: this method takes exactly one",
            ));
        }
        Ok(())
    }
}

impl http_body::Body for Framed {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let this = &mut *self;
        let polled = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        let checked = match polled {
            Some(Ok(frame)) => match frame.data_ref().map(|data| this.scan(data)) {
                Some(Err(status)) => Err(status),
                _ => return Poll::Ready(Some(Ok(frame))),
            },
            Some(Err(status)) => Err(status),
            None => this.finish(),
        };
        this.done = true;
        Poll::Ready(checked.err().map(Err))
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    /// `messages` framed, split into `chunk`-byte data frames.
    fn body(messages: &[&[u8]], chunk: usize) -> Body {
        let mut wire = Vec::new();
        for m in messages {
            wire.push(0);
            wire.extend_from_slice(&u32::try_from(m.len()).unwrap().to_be_bytes());
            wire.extend_from_slice(m);
        }
        let frames: Vec<Result<Frame<Bytes>, Status>> = wire
            .chunks(chunk)
            .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
            .collect();
        Body::new(http_body_util::StreamBody::new(tokio_stream::iter(frames)))
    }

    async fn read(body: Body, single: bool) -> Result<(), Status> {
        Framed::new(body, single).collect().await.map(|_| ())
    }

    #[tokio::test]
    async fn a_single_message_call_takes_exactly_one_message_however_chunked() {
        for chunk in [1, 2, 5, 7, 1024] {
            assert!(read(body(&[b"abc"], chunk), true).await.is_ok());
            assert!(read(body(&[b""], chunk), true).await.is_ok());
            let two = read(body(&[b"abc", b""], chunk), true).await.unwrap_err();
            assert_eq!(two.code(), tonic::Code::InvalidArgument, "{chunk}");
            assert!(two.message().contains("more than one"));
            // Streaming calls carry as many as they like.
            assert!(
                read(body(&[b"abc", b"", b"de"], chunk), false)
                    .await
                    .is_ok()
            );
        }
        let none = read(body(&[], 1), true).await.unwrap_err();
        assert!(none.message().contains("no request message"));
        assert!(read(body(&[], 1), false).await.is_ok());
    }

    #[tokio::test]
    async fn a_body_that_ends_inside_a_message_is_refused() {
        let mut wire = vec![0, 0, 0, 0, 9];
        wire.extend_from_slice(b"abc");
        let cut = Body::new(http_body_util::Full::new(Bytes::from(wire)));
        let status = read(cut, false).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        let header_only = Body::new(http_body_util::Full::new(Bytes::from_static(&[0, 0])));
        assert!(read(header_only, true).await.is_err());
    }

    #[test]
    fn only_grpc_with_protobuf_is_accepted() {
        let accepts = |v: &'static str| is_grpc_proto(Some(&HeaderValue::from_static(v)));
        assert!(accepts("application/grpc"));
        assert!(accepts("application/grpc+proto"));
        assert!(accepts("Application/GRPC; charset=utf-8"));
        assert!(!accepts("text/plain"));
        assert!(!accepts("application/grpc+json"));
        assert!(!accepts("application/grpc-web"));
        assert!(!accepts("application/grpcx"));
        assert!(!is_grpc_proto(None));
    }

    #[test]
    fn a_refused_content_type_gets_415_with_a_capped_echo() {
        let long = HeaderValue::from_str(&"t".repeat(10_000)).unwrap();
        let response = unsupported_media_type(Some(&long));
        assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(response.headers()["grpc-status"], "3");
        assert!(response.headers()["grpc-message"].len() < 1_000);
    }
}

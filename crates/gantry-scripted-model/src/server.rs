//! The HTTP server: records each request and answers it with the next step.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::script::{HttpError, Script, Step};
use crate::wire::openai_chat::completion;
use crate::wire::{Context, Frame, Wire, anthropic, openai_chat, openai_responses};

/// One request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// Request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers, names lower-cased (non-UTF-8 values are left out).
    pub headers: BTreeMap<String, String>,
    /// The JSON body (a JSON string holding the raw text if it was not JSON).
    pub body: Value,
    /// When it arrived.
    pub received_at: std::time::Instant,
    /// When the first event of its streamed answer was handed to the
    /// connection (the model's "first token"), for latency measurements.
    pub first_event_at: Option<std::time::Instant>,
}

impl RecordedRequest {
    /// A header's value by (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The images its messages carried, in order, whatever the wire.
    pub fn images(&self) -> Vec<crate::RecordedImage> {
        crate::images::images_in(&self.body)
    }
}

/// `GET /_mock/requests`: what the server received so far, for clients in
/// other languages (`[{path, headers, body, images}]`; `images` as
/// [`RecordedRequest::images`]).
async fn recorded(AxumState(shared): AxumState<Shared>) -> Response {
    let requests: Vec<Value> = shared
        .lock()
        .requests
        .iter()
        .map(
            |r| json!({"path": r.path, "headers": r.headers, "body": r.body, "images": r.images()}),
        )
        .collect();
    axum::Json(requests).into_response()
}

/// Server state shared by the handlers and the [`MockLlm`] handle.
#[derive(Default)]
struct State {
    steps: VecDeque<Step>,
    /// Steps consumed so far.
    served: usize,
    /// Tool calls streamed so far, for default `call_<n>` ids.
    calls: usize,
    requests: Vec<RecordedRequest>,
}

#[derive(Clone)]
struct Shared {
    state: Arc<Mutex<State>>,
    /// Changes (closes) when the [`MockLlm`] is dropped.
    shutdown: watch::Receiver<()>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not hide the recorded requests.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A scripted OpenAI Chat Completions server on 127.0.0.1. Dropping it stops
/// the server and ends any response still streaming.
pub struct MockLlm {
    addr: SocketAddr,
    shared: Shared,
    // Dropping the sender is the shutdown signal.
    _shutdown: watch::Sender<()>,
}

impl std::fmt::Debug for MockLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockLlm")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MockLlm {
    /// Binds 127.0.0.1 on a free port and serves `script` on a background
    /// task of the current tokio runtime (an error outside a runtime).
    pub fn start(script: impl Into<Script>) -> io::Result<MockLlm> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| io::Error::other(format!("MockLlm::start needs a tokio runtime: {e}")))?;
        let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(std_listener)?
        };

        let (tx, rx) = watch::channel(());
        let state = State {
            steps: script.into().steps.into(),
            ..State::default()
        };
        let shared = Shared {
            state: Arc::new(Mutex::new(state)),
            shutdown: rx.clone(),
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .route("/chat/completions", post(handle))
            .route("/v1/responses", post(handle))
            .route("/responses", post(handle))
            .route("/v1/messages", post(handle))
            .route("/messages", post(handle))
            .route("/_mock/requests", get(recorded))
            // Requests as large as providers take (a conversation with
            // images), not axum's 2 MB.
            .layer(axum::extract::DefaultBodyLimit::max(256 * 1024 * 1024))
            .with_state(shared.clone());
        let mut stop = rx;
        // No Nagle delay on small SSE events: latency measurements see the
        // client under test, not this server's socket.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
            // Err means the sender (the MockLlm) is gone: time to stop.
            while stop.changed().await.is_ok() {}
        });
        runtime.spawn(async move {
            let _ = serve.await;
        });
        Ok(MockLlm {
            addr,
            shared,
            _shutdown: tx,
        })
    }

    /// `http://127.0.0.1:PORT/v1`, ready for an OpenAI-compatible client.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The socket the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// How many requests were received so far.
    pub fn request_count(&self) -> usize {
        self.shared.lock().requests.len()
    }

    /// Steps not yet consumed.
    pub fn remaining(&self) -> usize {
        self.shared.lock().steps.len()
    }
}

fn error_response(status: StatusCode, message: &str, kind: &str) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
    (status, axum::Json(body)).into_response()
}

async fn handle(
    AxumState(shared): AxumState<Shared>,
    uri: Uri,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let parsed = serde_json::from_slice::<Value>(&raw);
    let body = match &parsed {
        Ok(v) => v.clone(),
        Err(_) => Value::String(String::from_utf8_lossy(&raw).into_owned()),
    };
    let headers = headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let (step, served, first_call, index) = {
        let mut state = shared.lock();
        let index = state.requests.len();
        state.requests.push(RecordedRequest {
            path: uri.path().to_owned(),
            headers,
            body: body.clone(),
            received_at: std::time::Instant::now(),
            first_event_at: None,
        });
        if let Err(e) = &parsed {
            let msg = format!("gantry-scripted-model: request body is not JSON: {e}");
            return error_response(StatusCode::BAD_REQUEST, &msg, "invalid_request_error");
        }
        let step = state.steps.pop_front();
        let first_call = state.calls + 1;
        if let Some(step) = &step {
            state.served += 1;
            if let Step::Reply(r) = step {
                state.calls += r.tool_calls.len();
            }
        }
        (step, state.served, first_call, index)
    };
    match step {
        None => {
            let msg = format!("gantry-scripted-model: script exhausted after {served} requests");
            error_response(StatusCode::BAD_REQUEST, &msg, "invalid_request_error")
        }
        Some(Step::Error(e)) => {
            http_error(&e, Wire::from_path(uri.path()).unwrap_or(Wire::OpenAiChat))
        }
        Some(Step::Raw(raw)) => {
            let mut response = Body::from(raw.sse).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
            response
        }
        Some(Step::Reply(reply)) => {
            let wire = Wire::from_path(uri.path()).unwrap_or(Wire::OpenAiChat);
            // Shaped like each provider's ids.
            let prefix = match wire {
                Wire::OpenAiChat => "chatcmpl-",
                Wire::OpenAiResponses => "resp_",
                Wire::Anthropic => "msg_",
            };
            let ctx = Context {
                id: format!("{prefix}gantry{served}"),
                model: reply
                    .model
                    .clone()
                    .unwrap_or_else(|| body["model"].as_str().unwrap_or("scripted").to_owned()),
                created: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
                first_call,
                include_usage: body["stream_options"]["include_usage"] == true,
                prompt_chars: body["messages"].to_string().len() + body["input"].to_string().len(),
                request: body.clone(),
            };
            if body["stream"] == true {
                let frames = match wire {
                    Wire::OpenAiChat => openai_chat::stream_frames(&reply, &ctx),
                    Wire::OpenAiResponses => openai_responses::stream_frames(&reply, &ctx),
                    Wire::Anthropic => anthropic::stream_frames(&reply, &ctx),
                };
                sse_response(frames, reply.delay_ms, shared.clone(), index)
            } else {
                axum::Json(completion(&reply, &ctx)).into_response()
            }
        }
    }
}

fn http_error(e: &HttpError, wire: Wire) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = e.body.clone().unwrap_or_else(|| match wire {
        Wire::Anthropic => anthropic::error_body(e.status),
        Wire::OpenAiChat | Wire::OpenAiResponses => openai_error_body(e.status),
    });
    let mut response = (status, axum::Json(body)).into_response();
    if let Some(secs) = e.retry_after {
        // `1` rather than `1.0` for whole seconds: what real providers send.
        if let Ok(value) = HeaderValue::from_str(&secs.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    response
}

/// OpenAI's error body (Chat Completions and Responses).
fn openai_error_body(status: u16) -> Value {
    let (kind, code) = match status {
        401 | 403 => ("invalid_request_error", "invalid_api_key"),
        429 => ("requests", "rate_limit_exceeded"),
        s if s >= 500 => ("server_error", "server_error"),
        _ => ("invalid_request_error", "invalid_request"),
    };
    let message = format!("gantry-scripted-model: scripted HTTP {status}");
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// Streams `frames` as SSE; stamps the request's `first_event_at` when the
/// first one goes out.
fn sse_response(frames: Vec<Frame>, delay_ms: u64, shared: Shared, request: usize) -> Response {
    let frames: VecDeque<Frame> = frames.into();
    let delay = Duration::from_millis(delay_ms);
    let shutdown = shared.shutdown.clone();
    let body = futures_util::stream::unfold(
        (frames, shutdown, Some(shared)),
        move |(mut frames, mut shutdown, mut stamp)| async move {
            let frame = frames.pop_front()?;
            if let Some(shared) = stamp.take()
                && let Some(r) = shared.lock().requests.get_mut(request)
            {
                r.first_event_at = Some(std::time::Instant::now());
            }
            if !delay.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = shutdown.changed() => return None,
                }
            }
            // The server is going away: end the body, don't keep streaming.
            if shutdown.has_changed().is_err() {
                return None;
            }
            let item = match frame {
                Frame::Data(data) => Ok(Bytes::from(format!("data: {data}\n\n"))),
                Frame::Event { event, data } => {
                    Ok(Bytes::from(format!("event: {event}\ndata: {data}\n\n")))
                }
                // An error item makes hyper drop the connection mid-body,
                // which is what a real network cut looks like to a client.
                // Yielding first lets hyper flush the events written so far;
                // it discards its write buffer when the body fails.
                Frame::Cut => {
                    tokio::task::yield_now().await;
                    Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "scripted cut",
                    ))
                }
            };
            Some((item, (frames, shutdown, stamp)))
        },
    );
    let mut response = Body::from_stream(body).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

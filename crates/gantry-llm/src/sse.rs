//! The streaming request every client shares: lazy (nothing happens until
//! polled), retried per [`RetryPolicy`] before the first streamed byte,
//! aborted when dropped. Each API plugs in its body builder and its parser.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::{ClientConfig, ModelError, ModelEvent, ModelRequest, ModelStream, RetryPolicy, http};

/// W3C Trace Context's header.
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// Whether the answer is complete after an event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// More events are expected.
    More,
    /// `Finished` was emitted; the stream is over.
    Done,
}

/// Turns one API's SSE events into [`ModelEvent`]s.
pub(crate) trait SseParser: Default + Send + 'static {
    /// Handles one SSE event (`kind` is its `event:` field, empty if none).
    fn on_event(
        &mut self,
        kind: &str,
        data: &str,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Progress, ModelError>;

    /// The body ended: finish, or fail with [`ModelError::StreamCut`].
    fn on_eof(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError>;

    /// A whole JSON answer instead of a stream (an unstreamed request, or
    /// a server that ignored `stream: true`); an API that has none refuses.
    fn on_whole(&mut self, body: &str, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        let _ = out;
        Err(ModelError::MalformedStream(format!(
            "expected an event stream, got JSON: {}",
            http::excerpt(body)
        )))
    }
}

/// A request body builder: what the API wants for a [`ModelRequest`].
pub(crate) type BodyFn = Arc<dyn Fn(&ModelRequest) -> String + Send + Sync>;

/// Where and how one client sends its requests.
pub(crate) struct Endpoint {
    pub http: reqwest::Client,
    pub url: Url,
    pub headers: HeaderMap,
    pub retry: RetryPolicy,
    /// The API's request body for a [`ModelRequest`].
    pub body: BodyFn,
    /// The same request unstreamed, where the API has that: sent when a
    /// streamed one was answered with an empty stream (a local server that
    /// cannot stream what it was asked, or refuses without saying why).
    pub unstreamed: Option<BodyFn>,
    /// The server refused native structured output (llama-cpp-python
    /// knows no `json_schema` format): later requests go without it, held
    /// to their schema by the agent loop's validation alone.
    pub native_output_refused: AtomicBool,
}

impl Endpoint {
    /// The endpoint `{base_url}{api_path}` of `config`, sending `secret`
    /// (header name and value) and `extra` headers (later ones win).
    pub(crate) fn new(
        config: &ClientConfig,
        api_path: &str,
        secret: Option<(HeaderName, String)>,
        extra: &[(String, String)],
        body: BodyFn,
        unstreamed: Option<BodyFn>,
    ) -> Result<Arc<Self>, ModelError> {
        let url = http::endpoint(&config.base_url, api_path)?;
        let mut headers_in = extra.to_vec();
        headers_in.extend(config.extra_headers.iter().cloned());
        Ok(Arc::new(Self {
            http: http::client_for(&url)?,
            headers: http::headers(secret, &headers_in)?,
            url,
            retry: config.retry,
            body,
            unstreamed,
            native_output_refused: AtomicBool::new(false),
        }))
    }
}

/// Starts a lazy streaming request to `endpoint`, parsed by `P`.
pub(crate) fn stream<P: SseParser>(endpoint: Arc<Endpoint>, request: ModelRequest) -> ModelStream {
    // The endpoint's headers, and the request's `traceparent` (a malformed
    // one is not sent: the engine makes only valid ones), once per request.
    let traced = request
        .trace_parent
        .as_deref()
        .and_then(|t| HeaderValue::from_str(t).ok())
        .map(|value| {
            let mut headers = endpoint.headers.clone();
            headers.insert(TRACEPARENT, value);
            headers
        });
    let run = Run::<P> {
        endpoint,
        traced,
        request: Some(request),
        events: 0,
        unstreamed: false,
        body: Bytes::new(),
        attempts: 0,
        last_failure: None,
        phase: Phase::Connect,
        pending: VecDeque::new(),
        failure: None,
    };
    Box::pin(futures_util::stream::unfold(run, Run::next))
}

type SseStream =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// Where one request is in its life.
enum Phase<P> {
    /// (Re)send the request.
    Connect,
    /// Wait before the next attempt.
    Backoff(Duration),
    /// Read the answer.
    Streaming(SseStream, P),
    /// Nothing more to yield once `pending` is empty.
    Done,
}

/// The state behind a [`ModelStream`]: dropping it drops the HTTP response,
/// which aborts the request.
struct Run<P> {
    endpoint: Arc<Endpoint>,
    /// The endpoint's headers with the request's `traceparent`, when it
    /// has one: every attempt's.
    traced: Option<HeaderMap>,
    /// Serialized lazily, on first poll, into `body` (kept while an
    /// unstreamed retry may still need it).
    request: Option<ModelRequest>,
    /// Events the current answer's stream carried.
    events: usize,
    /// Whether the request went out unstreamed.
    unstreamed: bool,
    body: Bytes,
    /// Failed attempts so far.
    attempts: u32,
    /// The last attempt's failure: the same internal error twice (a 500
    /// with the same body: a server refusing what it cannot parse) is the
    /// server's answer to this request, not a passing fault; unavailable
    /// and gateway errors (502, 503, 504) stay retried.
    last_failure: Option<ModelError>,
    phase: Phase<P>,
    pending: VecDeque<ModelEvent>,
    /// The error that ends the stream, yielded after `pending`.
    failure: Option<ModelError>,
}

type Item = Result<ModelEvent, ModelError>;

impl<P: SseParser> Run<P> {
    async fn next(mut self) -> Option<(Item, Self)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some((Ok(event), self));
            }
            if let Some(error) = self.failure.take() {
                return Some((Err(error), self));
            }
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return None,
                Phase::Backoff(delay) => {
                    tokio::time::sleep(delay).await;
                    self.phase = Phase::Connect;
                }
                Phase::Connect => {
                    if self.body.is_empty()
                        && let Some(request) = &mut self.request
                    {
                        if self.endpoint.native_output_refused.load(Ordering::Relaxed) {
                            request.output_schema = None;
                        }
                        self.body = Bytes::from((self.endpoint.body)(request));
                        // Kept while a retry in another form may need it.
                        if self.endpoint.unstreamed.is_none() && request.output_schema.is_none() {
                            self.request = None;
                        }
                    }
                    let e = &self.endpoint;
                    let headers = self.traced.as_ref().unwrap_or(&e.headers);
                    match http::send(&e.http, &e.url, headers, self.body.clone()).await {
                        Ok(http::Answer::Stream(response)) => {
                            self.events = 0;
                            let events = response.bytes_stream().eventsource();
                            self.phase = Phase::Streaming(Box::pin(events), P::default());
                        }
                        Ok(http::Answer::Whole(body)) => {
                            if let Err(error) = P::default().on_whole(&body, &mut self.pending) {
                                self.failure = Some(error);
                            }
                        }
                        Err(error) if self.without_native_output(&error) => {}
                        Err(error) => return Some((self.retry_or_fail(error), self)),
                    }
                }
                Phase::Streaming(mut events, mut parser) => {
                    let result = match events.next().await {
                        Some(Ok(event)) => {
                            self.events += 1;
                            parser.on_event(&event.event, &event.data, &mut self.pending)
                        }
                        Some(Err(e)) => Err(stream_error(e)),
                        // Nothing at all: ask again unstreamed, which says why.
                        None if self.events == 0 && self.unstream() => continue,
                        None => parser.on_eof(&mut self.pending).map(|()| Progress::Done),
                    };
                    match result {
                        Ok(Progress::More) => self.phase = Phase::Streaming(events, parser),
                        Ok(Progress::Done) => {}
                        // Events parsed before the error are still delivered first.
                        Err(error) => self.failure = Some(error),
                    }
                }
            }
        }
    }

    /// Turns the request into its unstreamed form, once; whether it did.
    fn unstream(&mut self) -> bool {
        let (Some(body), Some(request), false) = (
            &self.endpoint.unstreamed,
            self.request.take(),
            self.unstreamed,
        ) else {
            return false;
        };
        self.body = Bytes::from(body(&request));
        self.unstreamed = true;
        self.phase = Phase::Connect;
        true
    }

    /// When `error` is the server refusing native structured output, makes
    /// the request again without it (and every later one of the client);
    /// whether it did. Not a retry: the server answered, and will again.
    fn without_native_output(&mut self, error: &ModelError) -> bool {
        let (ModelError::BadRequest { body, .. } | ModelError::Server { body, .. }) = error else {
            return false;
        };
        let Some(request) = self.request.as_mut().filter(|r| r.output_schema.is_some()) else {
            return false;
        };
        if !(body.contains("response_format") || body.contains("json_schema")) {
            return false;
        }
        // The host alone: a URL may carry a key (userinfo, a query).
        tracing::warn!(
            host = self.endpoint.url.host_str().unwrap_or_default(),
            "the model server refused native structured output; asking without it"
        );
        self.endpoint
            .native_output_refused
            .store(true, Ordering::Relaxed);
        request.output_schema = None;
        self.body = Bytes::from((self.endpoint.body)(request));
        if self.endpoint.unstreamed.is_none() {
            self.request = None;
        }
        self.phase = Phase::Connect;
        true
    }

    /// Schedules a retry (yielding `Retrying`) or gives up with `error`.
    fn retry_or_fail(&mut self, error: ModelError) -> Item {
        self.attempts += 1;
        let again = matches!(
            error,
            ModelError::Server {
                status: 500 | 501,
                ..
            }
        ) && self.last_failure.as_ref() == Some(&error);
        if again {
            return Err(error);
        }
        self.last_failure = Some(error.clone());
        match self.endpoint.retry.delay(self.attempts, &error) {
            Some(delay) => {
                self.phase = Phase::Backoff(delay);
                Ok(ModelEvent::Retrying {
                    attempt: self.attempts,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    reason: error.to_string(),
                })
            }
            None => Err(error),
        }
    }
}

/// A failure while reading the body: the answer is incomplete.
fn stream_error(e: EventStreamError<reqwest::Error>) -> ModelError {
    match e {
        EventStreamError::Transport(e) => ModelError::StreamCut(http::error_chain(&e)),
        EventStreamError::Utf8(e) => ModelError::MalformedStream(format!("invalid UTF-8: {e}")),
        EventStreamError::Parser(e) => ModelError::MalformedStream(format!("bad SSE framing: {e}")),
    }
}

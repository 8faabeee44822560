//! The OpenAI Chat Completions client (`POST {base}/chat/completions`,
//! streamed over SSE). It also serves Ollama, vLLM, OpenRouter, LM Studio and
//! any other OpenAI-compatible server.

mod http;
mod parse;
mod request;

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Once};
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use self::parse::{ChunkParser, Progress};
use crate::{ModelClient, ModelError, ModelEvent, ModelRequest, ModelStream, RetryPolicy};

/// How to reach an OpenAI-compatible server.
#[derive(Clone, PartialEq)]
pub struct OpenAiChatConfig {
    /// Server URL, with or without the version segment: `http://localhost:11434`,
    /// `https://api.openai.com/v1` and `https://openrouter.ai/api/v1` all work.
    pub base_url: String,
    /// Sent as `Authorization: Bearer KEY` when set.
    pub api_key: Option<String>,
    /// Retries of failed requests (before the first streamed byte).
    pub retry: RetryPolicy,
    /// Extra headers sent with every request (e.g. `HTTP-Referer` for OpenRouter).
    pub extra_headers: Vec<(String, String)>,
}

impl OpenAiChatConfig {
    /// A config for `base_url` with no key, default retries and no extra headers.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            retry: RetryPolicy::default(),
            extra_headers: Vec::new(),
        }
    }
}

// Hand-written so the API key never lands in logs.
impl std::fmt::Debug for OpenAiChatConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChatConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("retry", &self.retry)
            .field("extra_headers", &self.extra_headers)
            .finish()
    }
}

/// A [`ModelClient`] for the Chat Completions API. Cheap to clone.
#[derive(Clone)]
pub struct OpenAiChatClient {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    url: Url,
    headers: HeaderMap,
    retry: RetryPolicy,
}

impl std::fmt::Debug for OpenAiChatClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChatClient")
            .field("url", &self.inner.url.as_str())
            .finish()
    }
}

impl OpenAiChatClient {
    /// Builds a client; fails with [`ModelError::Config`] on a bad URL or header.
    pub fn new(config: OpenAiChatConfig) -> Result<Self, ModelError> {
        let url = endpoint(&config.base_url)?;
        let headers = headers(&config)?;
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("gantry/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(30));
        // reqwest builds a rustls config even for plain HTTP, so a provider is always needed.
        install_crypto_provider();
        if url.scheme() == "http" {
            // Plain HTTP needs no trust roots; an empty store skips reading the
            // system certificates (tens of ms) on every local-model start.
            builder = builder.tls_certs_only(std::iter::empty());
        }
        let http = builder.build().map_err(|e| {
            ModelError::Config(format!(
                "cannot build HTTP client: {}",
                http::error_chain(&e)
            ))
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                http,
                url,
                headers,
                retry: config.retry,
            }),
        })
    }

    /// The full `.../chat/completions` URL requests go to.
    pub fn endpoint(&self) -> &str {
        self.inner.url.as_str()
    }
}

/// rustls needs one process-wide crypto provider; ring is the one compiled in.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err only means another provider was installed first, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// `.../chat/completions` for a base URL with or without its version segment.
fn endpoint(base_url: &str) -> Result<Url, ModelError> {
    let mut url = Url::parse(base_url.trim())
        .map_err(|e| ModelError::Config(format!("invalid base URL {base_url:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ModelError::Config(format!(
            "invalid base URL {base_url:?}: scheme must be http or https"
        )));
    }
    let path = url.path().trim_end_matches('/').to_owned();
    let last = path.rsplit('/').next().unwrap_or("");
    let full = if path.ends_with("/chat/completions") {
        path
    } else if is_version_segment(last) {
        format!("{path}/chat/completions")
    } else {
        format!("{path}/v1/chat/completions")
    };
    url.set_path(&full);
    Ok(url)
}

/// `v1`, `v2`, `v1beta`, `v1alpha2`: a `v`, digits, then letters or digits.
fn is_version_segment(segment: &str) -> bool {
    let Some(rest) = segment.strip_prefix('v') else {
        return false;
    };
    rest.starts_with(|c: char| c.is_ascii_digit())
        && rest.chars().all(|c| c.is_ascii_alphanumeric())
}

fn headers(config: &OpenAiChatConfig) -> Result<HeaderMap, ModelError> {
    let mut map = HeaderMap::new();
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    map.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    if let Some(key) = &config.api_key {
        let mut value = HeaderValue::try_from(format!("Bearer {key}")).map_err(|_| {
            ModelError::Config("API key contains characters not allowed in a header".into())
        })?;
        value.set_sensitive(true);
        map.insert(AUTHORIZATION, value);
    }
    for (name, value) in &config.extra_headers {
        let bad =
            |what: &str| ModelError::Config(format!("invalid extra header {name:?}: bad {what}"));
        let name = HeaderName::try_from(name.as_str()).map_err(|_| bad("name"))?;
        let value = HeaderValue::try_from(value.as_str()).map_err(|_| bad("value"))?;
        map.insert(name, value);
    }
    Ok(map)
}

impl ModelClient for OpenAiChatClient {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let run = Run {
            inner: self.inner.clone(),
            request: Some(request),
            body: Bytes::new(),
            attempts: 0,
            phase: Phase::Connect,
            pending: VecDeque::new(),
            failure: None,
        };
        Box::pin(futures_util::stream::unfold(run, Run::next))
    }
}

type SseStream =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// Where one request is in its life.
enum Phase {
    /// (Re)send the request.
    Connect,
    /// Wait before the next attempt.
    Backoff(Duration),
    /// Read the answer.
    Streaming(SseStream, ChunkParser),
    /// Nothing more to yield once `pending` is empty.
    Done,
}

/// The state behind a [`ModelStream`]: nothing happens until it is polled,
/// and dropping it drops the HTTP response, which aborts the request.
struct Run {
    inner: Arc<Inner>,
    /// Serialized lazily, on first poll, into `body`.
    request: Option<ModelRequest>,
    body: Bytes,
    /// Failed attempts so far.
    attempts: u32,
    phase: Phase,
    pending: VecDeque<ModelEvent>,
    /// The error that ends the stream, yielded after `pending`.
    failure: Option<ModelError>,
}

type Item = Result<ModelEvent, ModelError>;

impl Run {
    async fn next(mut self) -> Option<(Item, Run)> {
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
                    if let Some(request) = self.request.take() {
                        self.body = Bytes::from(request::body(&request).to_string());
                    }
                    let inner = &self.inner;
                    match http::send(&inner.http, &inner.url, &inner.headers, self.body.clone())
                        .await
                    {
                        Ok(response) => {
                            let events = response.bytes_stream().eventsource();
                            self.phase = Phase::Streaming(Box::pin(events), ChunkParser::default());
                        }
                        Err(error) => return Some((self.retry_or_fail(error), self)),
                    }
                }
                Phase::Streaming(mut events, mut parser) => {
                    let result = match events.next().await {
                        Some(Ok(event)) => {
                            parser.on_event(&event.event, &event.data, &mut self.pending)
                        }
                        Some(Err(e)) => Err(stream_error(e)),
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

    /// Schedules a retry (yielding `Retrying`) or gives up with `error`.
    fn retry_or_fail(&mut self, error: ModelError) -> Item {
        self.attempts += 1;
        match self.inner.retry.delay(self.attempts, &error) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn url(base: &str) -> String {
        endpoint(base)
            .map(|u| u.to_string())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn base_url_with_or_without_version() {
        assert_eq!(url("http://h:1"), "http://h:1/v1/chat/completions");
        assert_eq!(url("http://h:1/"), "http://h:1/v1/chat/completions");
        assert_eq!(url("http://h:1/v1"), "http://h:1/v1/chat/completions");
        assert_eq!(
            url("http://h:1/api/v1/"),
            "http://h:1/api/v1/chat/completions"
        );
        assert_eq!(
            url("https://h/v1beta/openai"),
            "https://h/v1beta/openai/v1/chat/completions"
        );
        assert_eq!(url("https://h/v1beta"), "https://h/v1beta/chat/completions");
        assert_eq!(
            url("http://h:1/v1/chat/completions"),
            "http://h:1/v1/chat/completions"
        );
        assert_eq!(url("http://h:1/vx"), "http://h:1/vx/v1/chat/completions");
        assert_eq!(
            url("http://h:1/v1?x=1"),
            "http://h:1/v1/chat/completions?x=1"
        );
    }

    #[test]
    fn bad_urls_and_headers_are_config_errors() {
        for bad in ["", "localhost:11434", "ftp://h/v1", "http://"] {
            assert!(matches!(endpoint(bad), Err(ModelError::Config(_))), "{bad}");
        }
        let mut config = OpenAiChatConfig::new("http://h:1");
        config.extra_headers.push(("bad name".into(), "x".into()));
        assert!(matches!(
            OpenAiChatClient::new(config),
            Err(ModelError::Config(_))
        ));
    }

    #[test]
    fn debug_hides_the_key() {
        let mut config = OpenAiChatConfig::new("http://h:1");
        config.api_key = Some("sk-secret".into());
        assert!(!format!("{config:?}").contains("sk-secret"));
    }

    #[test]
    fn version_segments() {
        for yes in ["v1", "v2", "v1beta", "v10alpha2"] {
            assert!(is_version_segment(yes), "{yes}");
        }
        for no in ["", "v", "vx", "api", "v1.0", "version1"] {
            assert!(!is_version_segment(no), "{no}");
        }
    }
}

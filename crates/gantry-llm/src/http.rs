//! HTTP shared by every client: building the client and its endpoint URL,
//! sending a request, and mapping HTTP failures onto [`ModelError`].

use std::error::Error as _;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, RETRY_AFTER};

use std::sync::Once;

use reqwest::Url;
use reqwest::header::{ACCEPT, HeaderName, HeaderValue};

use crate::ModelError;

/// Provider error bodies are kept up to this many bytes.
const MAX_BODY: usize = 2048;

/// A successful answer: a stream to read, or one JSON document (an
/// unstreamed answer, or a server that ignored `stream: true`).
pub(crate) enum Answer {
    /// An event stream.
    Stream(reqwest::Response),
    /// A whole JSON answer (at most [`MAX_WHOLE`] bytes).
    Whole(String),
}

/// The longest whole (unstreamed) answer read.
const MAX_WHOLE: usize = 16 * 1024 * 1024;

/// POSTs `body`; its answer, or the failure it is.
pub(crate) async fn send(
    http: &reqwest::Client,
    url: &reqwest::Url,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Answer, ModelError> {
    let response = http
        .post(url.clone())
        .headers(headers.clone())
        .body(body)
        .send()
        .await
        .map_err(|e| ModelError::Connect {
            url: url.to_string(),
            reason: error_chain(&e),
        })?;
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if (200..300).contains(&status) && !is_json {
        return Ok(Answer::Stream(response));
    }
    if (200..300).contains(&status) {
        if response
            .content_length()
            .is_some_and(|n| n > MAX_WHOLE as u64)
        {
            return Err(ModelError::MalformedStream(format!(
                "an answer of more than {MAX_WHOLE} bytes"
            )));
        }
        return match response.text().await {
            Ok(text) if text.len() <= MAX_WHOLE => Ok(Answer::Whole(text)),
            Ok(_) => Err(ModelError::MalformedStream(format!(
                "an answer of more than {MAX_WHOLE} bytes"
            ))),
            Err(e) => Err(ModelError::StreamCut(error_chain(&e))),
        };
    }
    let text = match response.text().await {
        Ok(text) => excerpt(&text),
        Err(e) => format!("(error body unreadable: {})", error_chain(&e)),
    };
    Err(match status {
        401 | 403 => ModelError::Auth { status, body: text },
        429 => ModelError::RateLimited {
            retry_after,
            body: text,
        },
        500.. => ModelError::Server { status, body: text },
        _ => ModelError::BadRequest { status, body: text },
    })
}

/// A reqwest client for `url`: cheap to build for plain HTTP (local models,
/// the testkit), with the system trust roots for HTTPS.
pub(crate) fn client_for(url: &Url) -> Result<reqwest::Client, ModelError> {
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("gantry/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(30));
    // reqwest builds a rustls config even for plain HTTP, so a provider is always needed.
    install_crypto_provider();
    if url.scheme() == "http" {
        // Plain HTTP needs no trust roots; an empty store skips reading the
        // system certificates (tens of ms) on every local-model start.
        builder = builder.tls_certs_only(std::iter::empty());
        // No idle connections kept: a plain-HTTP server is a local one (a
        // connect costs next to nothing), and a local server that aborts
        // an answer (llama.cpp's Python one, asked what it cannot stream)
        // leaves a dead connection the next request would be sent on.
        builder = builder.pool_max_idle_per_host(0);
    }
    builder
        .build()
        .map_err(|e| ModelError::Config(format!("cannot build HTTP client: {}", error_chain(&e))))
}

/// rustls needs one process-wide crypto provider; ring is the one compiled in.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err only means another provider was installed first, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// `{base}/{api_path}` for a base URL given with or without its version
/// segment: `http://h:1`, `http://h:1/v1` and `https://h/api/v1/` all work
/// (`/v1` is added when the path has no version segment). A base URL that
/// already ends with `api_path` is used as it is.
pub(crate) fn endpoint(base_url: &str, api_path: &str) -> Result<Url, ModelError> {
    let mut url = Url::parse(base_url.trim())
        .map_err(|e| ModelError::Config(format!("invalid base URL {base_url:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ModelError::Config(format!(
            "invalid base URL {base_url:?}: scheme must be http or https"
        )));
    }
    let path = url.path().trim_end_matches('/').to_owned();
    let last = path.rsplit('/').next().unwrap_or("");
    let full = if path.ends_with(api_path) {
        path
    } else if is_version_segment(last) {
        format!("{path}{api_path}")
    } else {
        format!("{path}/v1{api_path}")
    };
    url.set_path(&full);
    Ok(url)
}

/// `v1`, `v2`, `v1beta`, `v1alpha2`: a `v`, digits, then letters or digits.
pub(crate) fn is_version_segment(segment: &str) -> bool {
    let Some(rest) = segment.strip_prefix('v') else {
        return false;
    };
    rest.starts_with(|c: char| c.is_ascii_digit())
        && rest.chars().all(|c| c.is_ascii_alphanumeric())
}

/// JSON-in, SSE-out headers plus the given secret and extra headers.
pub(crate) fn headers(
    secret: Option<(HeaderName, String)>,
    extra: &[(String, String)],
) -> Result<HeaderMap, ModelError> {
    let mut map = HeaderMap::new();
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    map.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    if let Some((name, value)) = secret {
        let mut value = HeaderValue::try_from(value).map_err(|_| {
            ModelError::Config("API key contains characters not allowed in a header".into())
        })?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    for (name, value) in extra {
        let bad =
            |what: &str| ModelError::Config(format!("invalid extra header {name:?}: bad {what}"));
        let name = HeaderName::try_from(name.as_str()).map_err(|_| bad("name"))?;
        let value = HeaderValue::try_from(value.as_str()).map_err(|_| bad("value"))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// `Retry-After` in seconds (fractions allowed); HTTP dates are ignored.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let secs: f64 = headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Duration::try_from_secs_f64(secs).ok()
}

/// An error and its sources, so "connection refused" is not hidden behind
/// "error sending request".
pub(crate) fn error_chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// `text` cut to about 2 KB on a character boundary.
pub(crate) fn excerpt(text: &str) -> String {
    if text.len() <= MAX_BODY {
        return text.to_owned();
    }
    let mut cut = MAX_BODY;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes)", &text[..cut], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_cuts_on_char_boundary() {
        let long = "é".repeat(2000);
        let cut = excerpt(&long);
        assert!(cut.len() < 2100);
        assert!(cut.ends_with("(4000 bytes)"));
        assert_eq!(excerpt("short"), "short");
    }

    #[test]
    fn retry_after_reads_seconds() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(RETRY_AFTER, "0.5".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(500)));
        h.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
    }
}

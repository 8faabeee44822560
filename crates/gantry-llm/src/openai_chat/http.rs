//! Sending the request and mapping HTTP failures onto [`ModelError`].

use std::error::Error as _;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, RETRY_AFTER};

use crate::ModelError;

/// Provider error bodies are kept up to this many bytes.
const MAX_BODY: usize = 2048;

/// POSTs `body` and returns the response once it is known to be a stream.
pub(super) async fn send(
    http: &reqwest::Client,
    url: &reqwest::Url,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<reqwest::Response, ModelError> {
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
        return Ok(response);
    }
    let text = match response.text().await {
        Ok(text) => excerpt(&text),
        Err(e) => format!("(error body unreadable: {})", error_chain(&e)),
    };
    Err(match status {
        // A server that ignored `stream: true` answered with one JSON object.
        200..=299 => {
            ModelError::MalformedStream(format!("expected an event stream, got JSON: {text}"))
        }
        401 | 403 => ModelError::Auth { status, body: text },
        429 => ModelError::RateLimited {
            retry_after,
            body: text,
        },
        500.. => ModelError::Server { status, body: text },
        _ => ModelError::BadRequest { status, body: text },
    })
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
pub(super) fn error_chain(e: &reqwest::Error) -> String {
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
pub(super) fn excerpt(text: &str) -> String {
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

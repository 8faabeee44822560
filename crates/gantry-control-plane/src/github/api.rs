//! The GitHub REST transport: one request with GitHub's headers, its JSON
//! answer, and HTTP failures mapped onto [`GithubError`].

use std::error::Error as _;
use std::sync::Once;
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue};
use reqwest::{Method, Url};
use serde::de::DeserializeOwned;

use super::GithubError;

/// The REST API version these calls are written against.
const API_VERSION: &str = "2022-11-28";
/// A GitHub call that takes longer than this is treated as unreachable.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Error bodies are quoted up to this many characters.
const MAX_QUOTED: usize = 300;

/// How a request authenticates.
pub(super) enum Auth<'a> {
    /// As the app itself, with its JWT.
    App(&'a str),
    /// As an installation, with one of its access tokens.
    Installation(&'a str),
}

/// A client for one GitHub API base URL.
pub(super) struct RestClient {
    /// The base URL without a trailing `/`, e.g. `https://api.github.com`
    /// or `https://ghe.example.com/api/v3`.
    base: String,
    http: reqwest::Client,
}

impl RestClient {
    /// A client for `base_url` (`http` or `https`).
    pub(super) fn new(base_url: &str) -> Result<RestClient, GithubError> {
        let url = Url::parse(base_url.trim())
            .map_err(|e| GithubError::Config(format!("invalid API base URL {base_url:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(GithubError::Config(format!(
                "invalid API base URL {base_url:?}: scheme must be http or https"
            )));
        }
        install_crypto_provider();
        let mut builder = reqwest::Client::builder()
            // GitHub refuses requests without a User-Agent.
            .user_agent(concat!("gantry/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(TIMEOUT)
            .timeout(TIMEOUT);
        if url.scheme() == "http" {
            // Plain HTTP needs no trust roots: skip loading the system's.
            builder = builder.tls_certs_only(std::iter::empty());
        }
        let http = builder.build().map_err(|e| {
            GithubError::Config(format!("cannot build HTTP client: {}", error_chain(&e)))
        })?;
        Ok(RestClient {
            base: url.as_str().trim_end_matches('/').to_owned(),
            http,
        })
    }

    /// `method {base}{path}` (path with its query, from `/`), answered by
    /// a 2xx JSON body of type `T`.
    pub(super) async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        auth: Auth<'_>,
    ) -> Result<T, GithubError> {
        let url = format!("{}{path}", self.base);
        let credential = match auth {
            Auth::App(jwt) => format!("Bearer {jwt}"),
            Auth::Installation(token) => format!("token {token}"),
        };
        let mut credential = HeaderValue::try_from(credential)
            .map_err(|_| GithubError::Config("credential is not a valid header value".into()))?;
        credential.set_sensitive(true);
        let response = self
            .http
            .request(method, &url)
            .header(AUTHORIZATION, credential)
            .header(ACCEPT, "application/vnd.github+json")
            .header("X-GitHub-Api-Version", API_VERSION)
            .send()
            .await
            .map_err(|e| unreachable(&url, &e))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| unreachable(&url, &e))?;
        if !status.is_success() {
            return Err(GithubError::Api {
                status: status.as_u16(),
                message: error_message(&body),
            });
        }
        serde_json::from_slice(&body)
            .map_err(|e| GithubError::InvalidResponse(format!("GitHub at {url}: {e}")))
    }
}

fn unreachable(url: &str, error: &reqwest::Error) -> GithubError {
    GithubError::Unreachable {
        // Credentials travel in headers, never in the URL.
        url: url.to_owned(),
        reason: error_chain(error),
    }
}

/// GitHub's `{"message": ...}`, else the start of the body.
fn error_message(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct ErrorBody {
        message: String,
    }
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(e) => e.message,
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            if text.is_empty() {
                "(empty body)".to_owned()
            } else {
                text.chars().take(MAX_QUOTED).collect()
            }
        }
    }
}

/// An error and its causes, `: `-separated: reqwest's own message alone
/// ("error sending request") hides the reason (refused, DNS, TLS...).
fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // Some layers repeat their source's message: say it once.
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// rustls needs one process-wide crypto provider; ring is the one compiled in.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err only means another provider was installed first, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn githubs_message_is_kept_and_other_bodies_are_quoted_briefly() {
        assert_eq!(
            error_message(br#"{"message":"Bad credentials","documentation_url":"x"}"#),
            "Bad credentials"
        );
        assert_eq!(error_message(b"<html>oops</html>"), "<html>oops</html>");
        assert_eq!(error_message(b""), "(empty body)");
        assert_eq!(error_message(&[b'x'; 1000]).len(), MAX_QUOTED);
    }

    #[test]
    fn a_base_url_must_be_http_or_https() {
        let err = RestClient::new("ftp://github.example").err().unwrap();
        assert!(
            err.to_string().contains("scheme must be http or https"),
            "{err}"
        );
        assert!(RestClient::new("not a url").is_err());
        let client = RestClient::new("https://ghe.example.com/api/v3/").unwrap();
        assert_eq!(client.base, "https://ghe.example.com/api/v3");
    }
}

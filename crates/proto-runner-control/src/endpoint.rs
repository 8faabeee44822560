//! Where the control plane is and how to reach it: the URL's scheme and
//! host decide plaintext or TLS (`http://` or a loopback host: plaintext;
//! anything else: TLS), its path becomes a prefix of every rpc path, and
//! every call carries `authorization: Bearer <token>`.

use std::task::{Context, Poll};
use std::time::Duration;

use tonic::body::Body;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::codegen::http::{self, HeaderValue, Uri};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A control plane's address, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlPlaneUrl {
    /// `scheme://host:port`, the scheme being the one actually spoken.
    origin: String,
    /// Whether the connection is TLS.
    tls: bool,
    /// Path the rpc paths go under (`""` or `/prefix`, no trailing `/`).
    prefix: String,
}

impl std::fmt::Display for ControlPlaneUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.origin, self.prefix)
    }
}

impl ControlPlaneUrl {
    /// Parses a comma-separated list of URLs (the replicas of one control
    /// plane); says which one is wrong, and refuses an empty list.
    pub fn parse_list(urls: &str) -> Result<Vec<Self>, String> {
        let parsed = urls
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(Self::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if parsed.is_empty() {
            return Err("control plane URL: none given".to_owned());
        }
        Ok(parsed)
    }

    /// Parses `http(s)://host[:port][/prefix]`; says what is wrong otherwise.
    pub fn parse(url: &str) -> Result<Self, String> {
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("control plane URL `{url}`: {e}"))?;
        let scheme = uri.scheme_str().unwrap_or_default();
        if scheme != "http" && scheme != "https" {
            return Err(format!(
                "control plane URL `{url}`: use http:// or https://"
            ));
        }
        let Some(host) = uri.host().filter(|h| !h.is_empty()) else {
            return Err(format!("control plane URL `{url}`: no host"));
        };
        let tls = scheme == "https" && !is_loopback(host);
        let port = uri
            .port_u16()
            .unwrap_or(if scheme == "https" { 443 } else { 80 });
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        let prefix = uri.path().trim_end_matches('/').to_owned();
        Ok(ControlPlaneUrl {
            origin: format!("{}://{host}:{port}", if tls { "https" } else { "http" }),
            tls,
            prefix,
        })
    }

    /// Whether calls go over TLS.
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// The rpc path prefix (`""` when none).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Connects; a custom CA (PEM) is trusted besides the web's roots.
    pub(crate) async fn connect(
        &self,
        token: &str,
        ca_pem: Option<&[u8]>,
    ) -> Result<Outbound, String> {
        let mut endpoint = Endpoint::from_shared(self.origin.clone())
            .map_err(|e| format!("control plane URL: {e}"))?
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_nodelay(true)
            // A control plane that vanished without closing the connection
            // is noticed within a minute.
            .http2_keep_alive_interval(Duration::from_secs(20))
            .keep_alive_timeout(Duration::from_secs(20))
            .keep_alive_while_idle(true);
        if self.tls {
            let mut tls = ClientTlsConfig::new().with_webpki_roots();
            if let Some(pem) = ca_pem {
                tls = tls.ca_certificate(Certificate::from_pem(pem));
            }
            endpoint = endpoint
                .tls_config(tls)
                .map_err(|e| format!("TLS setup: {e}"))?;
        }
        let channel = endpoint
            .connect()
            .await
            .map_err(|e| format!("cannot connect to {}: {}", self.origin, error_chain(&e)))?;
        let auth = HeaderValue::try_from(format!("Bearer {token}"))
            .map_err(|_| "the token has characters a header cannot carry".to_owned())?;
        Ok(Outbound {
            inner: channel,
            prefix: self.prefix.clone(),
            auth,
        })
    }
}

fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The error and its causes on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The channel with the path prefix and the bearer token applied to every
/// call.
#[derive(Clone)]
pub(crate) struct Outbound {
    inner: Channel,
    prefix: String,
    auth: HeaderValue,
}

impl tower_service::Service<http::Request<Body>> for Outbound {
    type Response = http::Response<Body>;
    type Error = tonic::transport::Error;
    type Future = <Channel as tower_service::Service<http::Request<Body>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        if !self.prefix.is_empty() {
            let path = request
                .uri()
                .path_and_query()
                .map_or("/", PathAndQuery::as_str);
            let mut parts = request.uri().clone().into_parts();
            if let Ok(prefixed) = PathAndQuery::try_from(format!("{}{path}", self.prefix)) {
                parts.path_and_query = Some(prefixed);
                if let Ok(uri) = Uri::from_parts(parts) {
                    *request.uri_mut() = uri;
                }
            }
        }
        request
            .headers_mut()
            .insert(http::header::AUTHORIZATION, self.auth.clone());
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plaintext_for_http_and_loopback_tls_otherwise() {
        let plain = ControlPlaneUrl::parse("http://cp.example.com:8080").unwrap();
        assert!(!plain.is_tls());
        let local = ControlPlaneUrl::parse("https://127.0.0.1:7400").unwrap();
        assert!(!local.is_tls());
        let localhost = ControlPlaneUrl::parse("https://localhost").unwrap();
        assert!(!localhost.is_tls());
        let remote = ControlPlaneUrl::parse("https://cp.example.com").unwrap();
        assert!(remote.is_tls());
        assert_eq!(remote.origin, "https://cp.example.com:443");
    }

    #[test]
    fn a_path_becomes_the_rpc_prefix() {
        let url = ControlPlaneUrl::parse("http://127.0.0.1:7400/runners/v1/").unwrap();
        assert_eq!(url.prefix(), "/runners/v1");
        assert_eq!(ControlPlaneUrl::parse("http://h:1").unwrap().prefix(), "");
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        let err = ControlPlaneUrl::parse("ftp://h").unwrap_err();
        assert!(err.contains("use http:// or https://"), "{err}");
        let err = ControlPlaneUrl::parse("not a url").unwrap_err();
        assert!(err.starts_with("control plane URL `not a url`"), "{err}");
    }

    #[test]
    fn a_list_names_each_replica_in_order_and_the_bad_one() {
        let urls = ControlPlaneUrl::parse_list("http://a:1, https://b:2/p ,").unwrap();
        let shown: Vec<String> = urls.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["http://a:1", "https://b:2/p"]);
        let err = ControlPlaneUrl::parse_list("http://a:1,ftp://b").unwrap_err();
        assert!(err.contains("`ftp://b`"), "{err}");
        assert!(ControlPlaneUrl::parse_list(" , ").is_err());
    }
}

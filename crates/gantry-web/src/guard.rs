//! The checks both HTTP APIs run on every request before its route (each
//! then checks its own tokens and answers in its own error shape):
//!
//! 1. `Host` (and the request target's authority, when absolute) must name
//!    this server: the listen address's IP, the loopback names when it
//!    listens on loopback (or on every address), or an allowed host name.
//!    Else `421`: a DNS-rebinding page cannot reach a loopback API.
//! 2. `Origin`, when a browser sends one, must be `http(s)://` one of those
//!    names on the port the request was sent to; else `403`. No CORS: only
//!    the dashboard, served from here, may call from a browser.
//! 3. A request with a body (and, where an API says so, every `POST`) must
//!    be `Content-Type: application/json`; else `415`. Browsers send other
//!    types cross-origin without asking first; JSON makes them ask (CORS
//!    preflight), which these APIs never grant.
//!
//! [`bearer`] reads the token an API then checks; [`OneToken`] is the
//! whole guard of a listener whose one token comes from a file (CodeWhale,
//! Rome).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};

use std::sync::Arc;

use axum::body::HttpBody;
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};

/// The names a server answers to, and what else its checks need.
#[derive(Debug, Clone)]
pub struct Access {
    /// Host names (lowercase, without port or brackets) requests may name.
    names: HashSet<String>,
    /// Listening on loopback only: with no token made, the API is open.
    loopback_only: bool,
    /// Added to the `421` message: how to make a name one of ours.
    host_hint: &'static str,
    /// Every `POST` must be JSON, bodiless ones too.
    json_posts: bool,
}

impl Access {
    /// The rules of an API listening on `listen`, also answering to
    /// `allowed_hosts` (`name` or `name:port`).
    pub fn new(listen: SocketAddr, allowed_hosts: &[String]) -> Self {
        let ip = canonical(listen.ip());
        let mut names = HashSet::new();
        // Listening on every address includes loopback.
        if ip.is_loopback() || ip.is_unspecified() {
            for name in ["localhost", "127.0.0.1", "::1"] {
                names.insert(name.to_owned());
            }
        }
        if !ip.is_unspecified() {
            names.insert(ip.to_string());
        }
        for host in allowed_hosts {
            if let Some((name, _)) = split_host(host) {
                names.insert(name);
            }
        }
        Self {
            names,
            loopback_only: ip.is_loopback(),
            host_hint: "",
            json_posts: false,
        }
    }

    /// Says `hint` (e.g. the flag that allows a host) after a refused Host.
    pub fn with_host_hint(mut self, hint: &'static str) -> Self {
        self.host_hint = hint;
        self
    }

    /// Refuses a `POST` that is not JSON even when it has no body.
    pub fn with_json_posts(mut self) -> Self {
        self.json_posts = true;
        self
    }

    /// Whether the API listens on loopback only (may run without tokens).
    pub fn loopback_only(&self) -> bool {
        self.loopback_only
    }

    /// Whether `name` (lowercase, no port) is one this server answers to.
    pub fn answers_to(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// The host and origin checks (an API checks its token next).
    pub fn check_sender(&self, request: &Request) -> Result<(), Refusal> {
        let port = self.check_host(request)?;
        self.check_origin(request.headers(), port)
    }

    /// The request's host must be one of ours; returns the port it named.
    fn check_host(&self, request: &Request) -> Result<Option<u16>, Refusal> {
        // Two Host headers: which one a proxy in front of us read is unknown.
        if request
            .headers()
            .get_all(header::HOST)
            .iter()
            .nth(1)
            .is_some()
        {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "more than one Host header",
            ));
        }
        let mut named = Vec::new();
        // An absolute request target carries an authority, which wins over
        // Host (RFC 9112 §3.2.2): check both.
        if let Some(authority) = request.uri().authority() {
            named.push(authority.as_str().to_owned());
        }
        if let Some(host) = request.headers().get(header::HOST) {
            let host = host
                .to_str()
                .map_err(|_| Refusal::new(StatusCode::BAD_REQUEST, "Host: not text"))?;
            named.push(host.to_owned());
        }
        if named.is_empty() {
            return Err(Refusal::new(StatusCode::BAD_REQUEST, "missing Host header"));
        }
        let mut port = None;
        for value in &named {
            match split_host(value) {
                Some((name, p)) if self.names.contains(&name) => port = port.or(p),
                _ => {
                    return Err(Refusal::new(
                        StatusCode::MISDIRECTED_REQUEST,
                        format!(
                            "Host {value:?} is not a name this server answers to{}",
                            self.host_hint
                        ),
                    ));
                }
            }
        }
        Ok(port)
    }

    /// A browser's `Origin`, when sent, must be ours on the port asked.
    fn check_origin(&self, headers: &HeaderMap, port: Option<u16>) -> Result<(), Refusal> {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let text = origin.to_str().unwrap_or("<not text>");
        let refused = || {
            Refusal::new(
                StatusCode::FORBIDDEN,
                format!(
                    "Origin {text:?} may not call this API (only pages of the API's own \
                     origin may; other clients send no Origin)"
                ),
            )
        };
        let (default_port, rest) = if let Some(rest) = text.strip_prefix("http://") {
            (80, rest)
        } else if let Some(rest) = text.strip_prefix("https://") {
            (443, rest)
        } else {
            return Err(refused());
        };
        let (name, origin_port) = split_host(rest).ok_or_else(refused)?;
        if !self.names.contains(&name) {
            return Err(refused());
        }
        // A Host without a port (behind a proxy, say) says nothing to compare.
        if port.is_some_and(|p| p != origin_port.unwrap_or(default_port)) {
            return Err(refused());
        }
        Ok(())
    }

    /// A request with a body (or any `POST`, with [`Access::with_json_posts`])
    /// must be JSON (checked after the token: who may not call learns nothing
    /// of the route).
    pub fn check_content_type(&self, request: &Request) -> Result<(), Refusal> {
        let headers = request.headers();
        // HTTP/2 frames a body without a length header or chunking: only an
        // empty body is known to be empty.
        let has_body = HttpBody::size_hint(request.body()).exact() != Some(0)
            || headers.contains_key(header::TRANSFER_ENCODING)
            || headers
                .get(header::CONTENT_LENGTH)
                .is_some_and(|v| v.as_bytes() != b"0");
        let must = has_body || (self.json_posts && *request.method() == Method::POST);
        if !must {
            return Ok(());
        }
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
        if json {
            Ok(())
        } else {
            Err(Refusal::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Content-Type must be application/json",
            ))
        }
    }
}

/// The guard of a listener with one bearer token (none: open, for a
/// loopback listener): the host and origin checks on every request, then
/// exactly `Authorization: Bearer <token>` (the scheme case-sensitive, as
/// CodeWhale's app-server checks it) on every route but the open ones.
#[derive(Debug, Clone)]
pub struct OneToken {
    access: Access,
    token: Option<Arc<str>>,
}

impl OneToken {
    /// `access`'s checks, and `token` when there is one.
    pub fn new(access: Access, token: Option<String>) -> Self {
        Self {
            access,
            token: token.map(Arc::from),
        }
    }

    /// Checks `request`; `open` routes (a health check) need no token.
    pub fn check(&self, request: &Request, open: bool) -> Result<(), Refusal> {
        self.access.check_sender(request)?;
        let Some(expected) = self.token.as_deref().filter(|_| !open) else {
            return Ok(());
        };
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if given.is_some_and(|token| same(token.as_bytes(), expected.as_bytes())) {
            Ok(())
        } else {
            Err(Refusal::new(
                StatusCode::UNAUTHORIZED,
                "bearer token required",
            ))
        }
    }
}

/// Compares in time independent of where the bytes differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why a request was refused: its status and a message saying what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 400, 401, 403, 421, 415 or 503.
    pub status: StatusCode,
    /// What was wrong.
    pub message: String,
}

impl Refusal {
    /// A refusal with `status`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// The error code both APIs give this status.
    pub fn code(&self) -> &'static str {
        match self.status {
            StatusCode::UNAUTHORIZED => "unauthorized",
            StatusCode::FORBIDDEN => "forbidden",
            StatusCode::MISDIRECTED_REQUEST => "misdirected",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            StatusCode::SERVICE_UNAVAILABLE => "unavailable",
            _ => "bad_request",
        }
    }
}

/// Whether a request only reads.
pub fn reads(request: &Request) -> bool {
    matches!(*request.method(), Method::GET | Method::HEAD)
}

/// Whether a request is for the dashboard's page or files, which anyone who
/// reaches the server may read (the page asks for a token when the API
/// answers `401`).
pub fn is_dashboard(request: &Request) -> bool {
    let path = request.uri().path();
    reads(request) && (path == "/" || path.starts_with("/assets/"))
}

/// The token of an `Authorization: Bearer <token>` value (the scheme is
/// case-insensitive).
pub fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// `host[:port]` (or `[v6][:port]`) as a lowercase name without brackets
/// or trailing dot, and the port; `None` when it is not one.
fn split_host(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.trim();
    let (name, port) = if let Some(rest) = text.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?),
        };
        (v6, port)
    } else if text.matches(':').count() > 1 {
        // A bare IPv6 address (as an allowed host may be given).
        (text, None)
    } else {
        match text.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (text, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':'));
    valid.then_some((name, port))
}

/// An IPv4-mapped IPv6 address as the IPv4 one.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    fn addr(ip: IpAddr) -> SocketAddr {
        SocketAddr::new(ip, 7401)
    }

    #[test]
    fn hosts_split_into_lowercase_name_and_port() {
        assert_eq!(
            split_host("LocalHost:7401"),
            Some(("localhost".into(), Some(7401)))
        );
        assert_eq!(split_host("[::1]:80"), Some(("::1".into(), Some(80))));
        assert_eq!(split_host("::1"), Some(("::1".into(), None)));
        assert_eq!(split_host("cp.example."), Some(("cp.example".into(), None)));
        assert_eq!(split_host("a:b"), None);
        assert_eq!(split_host("evil.com/x"), None);
        assert_eq!(split_host("user@localhost"), None);
        assert_eq!(split_host(""), None);
    }

    #[test]
    fn loopback_names_only_when_listening_on_loopback_or_everywhere() {
        let lo = Access::new(addr(IpAddr::V4(Ipv4Addr::LOCALHOST)), &[]);
        assert!(lo.loopback_only());
        assert!(lo.answers_to("localhost") && lo.answers_to("::1"));

        let all = Access::new(addr(IpAddr::V6(Ipv6Addr::UNSPECIFIED)), &["cp.lan".into()]);
        assert!(!all.loopback_only());
        assert!(all.answers_to("localhost") && all.answers_to("cp.lan"));
        assert!(!all.answers_to("::"));

        let lan = Access::new(addr("10.0.0.5".parse().unwrap()), &[]);
        assert!(!lan.loopback_only());
        assert_eq!(lan.names, HashSet::from(["10.0.0.5".to_owned()]));
    }

    #[test]
    fn a_bearer_token_is_read_whatever_the_scheme_case() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
    }
}

//! Who may call the HTTP API, checked before any route runs:
//!
//! 1. `Host` (and the request target's authority, when absolute) must name
//!    this server: the listen address's IP, the loopback names when it
//!    listens on loopback (or on every address), or a `--allowed-host`.
//!    Anything else is `421`: a page that rebinds its own DNS name to this
//!    address still sends its own name.
//! 2. `Origin`, when a browser sends one, must be `http(s)://` one of those
//!    names on the port the request was sent to; else `403` (no page served
//!    from elsewhere, `null` included, may call the API).
//! 3. A bearer token of `gantry control-plane create-token` is required
//!    whenever one exists or the API listens beyond loopback; else `401`.
//!    `GET /openapi.json`, a fixed public document, needs none.
//! 4. A `POST`, or any request with a body, must say `Content-Type:
//!    application/json`; else `415`. Browsers send other types (`text/plain`,
//!    forms) cross-origin without asking first; `application/json` makes
//!    them ask (CORS preflight), which this API never grants.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::ControlPlane;
use crate::api_tokens;

/// The route that needs no token.
const OPEN_PATH: &str = "/openapi.json";

/// What the checks need: the names this server answers to, and whether it
/// may run without tokens.
#[derive(Debug, Clone)]
pub(crate) struct Access {
    /// Host names (lowercase, without port or brackets) requests may name.
    names: HashSet<String>,
    /// The API listens on loopback only: with no token created, it is open.
    loopback_only: bool,
}

impl Access {
    /// The access rules of an API listening on `listen`, also answering to
    /// `allowed_hosts`.
    pub(crate) fn new(listen: SocketAddr, allowed_hosts: &[String]) -> Self {
        let ip = canonical(listen.ip());
        let mut names = HashSet::new();
        if ip.is_loopback() || ip.is_unspecified() {
            // Listening on every address includes loopback.
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
        }
    }
}

/// Runs the checks, then the route.
pub(super) async fn guard(
    State((cp, access)): State<(ControlPlane, Arc<Access>)>,
    request: Request,
    next: Next,
) -> Response {
    // The request is not `Sync`: read what the token check needs before
    // awaiting it.
    let checked = check(&access, &request);
    let checked = match checked {
        Ok(Needs::Token(authorization)) => {
            check_token(&cp, &access, authorization.as_deref()).await
        }
        Ok(Needs::Nothing) => Ok(()),
        Err(refusal) => Err(refusal),
    };
    match checked.and_then(|()| check_content_type(&request)) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

/// Why a request was refused.
struct Refusal {
    status: StatusCode,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let code = match self.status {
            StatusCode::UNAUTHORIZED => "unauthorized",
            StatusCode::FORBIDDEN => "forbidden",
            StatusCode::MISDIRECTED_REQUEST => "misdirected",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            StatusCode::SERVICE_UNAVAILABLE => "unavailable",
            _ => "bad_request",
        };
        let body = Json(super::error::error_body(code, &self.message));
        let mut response = (self.status, body).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"gantry control plane\""),
            );
        }
        response
    }
}

/// What is left to check after the host and origin.
enum Needs {
    /// The route is open.
    Nothing,
    /// The token check, with the `Authorization` header if any.
    Token(Option<String>),
}

/// The host and origin checks; then what the token check needs.
fn check(access: &Access, request: &Request) -> Result<Needs, Refusal> {
    let headers = request.headers();
    let port = check_host(access, request)?;
    check_origin(access, headers, port)?;
    let open = request.uri().path() == OPEN_PATH
        && matches!(*request.method(), Method::GET | Method::HEAD);
    if open {
        return Ok(Needs::Nothing);
    }
    let authorization = headers
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or_default().to_owned());
    Ok(Needs::Token(authorization))
}

/// The request's host must be one of ours; returns the port it named.
fn check_host(access: &Access, request: &Request) -> Result<Option<u16>, Refusal> {
    let mut named = Vec::new();
    // An absolute request target carries an authority, which wins over Host
    // (RFC 9112 §3.2.2): check both.
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
        let parsed = split_host(value);
        match parsed {
            Some((name, p)) if access.names.contains(&name) => port = port.or(p),
            _ => {
                return Err(Refusal::new(
                    StatusCode::MISDIRECTED_REQUEST,
                    format!(
                        "Host {value:?} is not a name this control plane answers to; \
                         if it should be, start it with --allowed-host NAME"
                    ),
                ));
            }
        }
    }
    Ok(port)
}

/// A browser's `Origin`, when sent, must be one of our names on the port
/// the request was sent to.
fn check_origin(access: &Access, headers: &HeaderMap, port: Option<u16>) -> Result<(), Refusal> {
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
    if !access.names.contains(&name) {
        return Err(refused());
    }
    // A Host without a port (behind a proxy, say) says nothing to compare.
    if port.is_some_and(|p| p != origin_port.unwrap_or(default_port)) {
        return Err(refused());
    }
    Ok(())
}

/// A known bearer token, when tokens exist or the API is not loopback-only.
async fn check_token(
    cp: &ControlPlane,
    access: &Access,
    authorization: Option<&str>,
) -> Result<(), Refusal> {
    // Read per request: tokens are created and revoked by another process.
    let known = cp.inner.store.api_tokens().await.map_err(|e| {
        tracing::error!(error = %e, "cannot read the API tokens");
        Refusal::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "cannot check the API token right now",
        )
    })?;
    if known.is_empty() && access.loopback_only {
        return Ok(());
    }
    let presented = authorization.and_then(bearer);
    let Some(token) = presented else {
        let message = if known.is_empty() {
            "this control plane's HTTP API listens beyond loopback and no API token exists: \
             create one with `gantry control-plane create-token --name NAME` and send it as \
             `Authorization: Bearer <token>`"
        } else {
            "missing `Authorization: Bearer <token>` (tokens come from \
             `gantry control-plane create-token`)"
        };
        return Err(Refusal::new(StatusCode::UNAUTHORIZED, message));
    };
    match api_tokens::find(&known, token) {
        Some(_) => Ok(()),
        None => Err(Refusal::new(
            StatusCode::UNAUTHORIZED,
            "unknown or revoked API token",
        )),
    }
}

/// The token of an `Authorization: Bearer <token>` value (the scheme is
/// case-insensitive).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A `POST`, or a request with a body, must be JSON.
fn check_content_type(request: &Request) -> Result<(), Refusal> {
    let headers = request.headers();
    let has_body = headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() != b"0");
    if *request.method() != Method::POST && !has_body {
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
        // A bare IPv6 address (as `--allowed-host ::1` may be given).
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
        assert!(lo.loopback_only);
        assert!(lo.names.contains("localhost") && lo.names.contains("::1"));

        let all = Access::new(addr(IpAddr::V6(Ipv6Addr::UNSPECIFIED)), &["cp.lan".into()]);
        assert!(!all.loopback_only);
        assert!(all.names.contains("localhost") && all.names.contains("cp.lan"));
        assert!(!all.names.contains("::"));

        let lan = Access::new(addr("10.0.0.5".parse().unwrap()), &[]);
        assert!(!lan.loopback_only);
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

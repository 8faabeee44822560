//! Who may call the API, checked before any route runs (the control
//! plane's rules, so one client works against both):
//!
//! 1. `Host` must name this server: the listen address's IP, or the
//!    loopback names when it listens on loopback (or on every address).
//!    Anything else is `421`: a page that rebinds its own DNS name to this
//!    address still sends its own name.
//! 2. `Origin`, when a browser sends one, must be one of those names on the
//!    port the request was sent to; else `403`. No CORS: only the dashboard,
//!    served from here, may call from a browser.
//! 3. A bearer token of `gantry tokens create` is required whenever one
//!    exists or the API listens beyond loopback; else `401`. A read-only
//!    token may only `GET` (else `403`). The OpenAPI document, the health
//!    check and the dashboard's static files need none (the dashboard asks
//!    for a token when the API answers `401`).
//! 4. A `POST`, or any request with a body, must say `Content-Type:
//!    application/json`; else `415`: browsers send other types cross-origin
//!    without asking first.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::error::ApiError;
use crate::tokens;

/// The names this server answers to, and whether it may run without
/// tokens.
#[derive(Debug, Clone)]
pub(crate) struct Access {
    /// Host names (lowercase, without port or brackets) requests may name.
    names: HashSet<String>,
    /// Listening on loopback only: with no token made, the API is open.
    loopback_only: bool,
}

impl Access {
    /// The rules of an API listening on `listen`.
    pub(crate) fn new(listen: SocketAddr) -> Self {
        let ip = canonical(listen.ip());
        let mut names = HashSet::new();
        if ip.is_loopback() || ip.is_unspecified() {
            for name in ["localhost", "127.0.0.1", "::1"] {
                names.insert(name.to_owned());
            }
        }
        if !ip.is_unspecified() {
            names.insert(ip.to_string());
        }
        Self {
            names,
            loopback_only: ip.is_loopback(),
        }
    }
}

/// Runs the checks, then the route.
pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match check(&state, &request) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

fn check(state: &AppState, request: &Request) -> Result<(), ApiError> {
    let port = check_host(&state.access, request)?;
    check_origin(&state.access, request.headers(), port)?;
    if !is_open(request) {
        check_token(state, request)?;
    }
    check_content_type(request)
}

/// The routes anyone who reaches the server may read.
fn is_open(request: &Request) -> bool {
    let path = request.uri().path();
    matches!(*request.method(), Method::GET | Method::HEAD)
        && (matches!(path, "/" | "/openapi.json" | "/healthz") || path.starts_with("/assets/"))
}

/// The request's host must be one of ours; returns the port it named.
fn check_host(access: &Access, request: &Request) -> Result<Option<u16>, ApiError> {
    let mut named = Vec::new();
    // An absolute request target carries an authority, which wins over Host.
    if let Some(authority) = request.uri().authority() {
        named.push(authority.as_str().to_owned());
    }
    if let Some(host) = request.headers().get(header::HOST) {
        let host = host
            .to_str()
            .map_err(|_| ApiError::bad_request("Host: not text"))?;
        named.push(host.to_owned());
    }
    if named.is_empty() {
        return Err(ApiError::bad_request("missing Host header"));
    }
    let mut port = None;
    for value in &named {
        match split_host(value) {
            Some((name, p)) if access.names.contains(&name) => port = port.or(p),
            _ => {
                return Err(ApiError::misdirected(format!(
                    "Host {value:?} is not a name this server answers to"
                )));
            }
        }
    }
    Ok(port)
}

/// A browser's `Origin`, when sent, must be ours on the port asked.
fn check_origin(access: &Access, headers: &HeaderMap, port: Option<u16>) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let text = origin.to_str().unwrap_or("<not text>");
    let refused = || {
        ApiError::forbidden(format!(
            "Origin {text:?} may not call this API (only its own dashboard may; \
             other clients send no Origin)"
        ))
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
    if port.is_some_and(|p| p != origin_port.unwrap_or(default_port)) {
        return Err(refused());
    }
    Ok(())
}

/// A known bearer token, when tokens exist or the API is not loopback-only;
/// a read-only one only for reads.
fn check_token(state: &AppState, request: &Request) -> Result<(), ApiError> {
    // Read per request: tokens are made and revoked by another process.
    let known = state.tokens.list().map_err(|e| {
        tracing::error!(error = %e, "cannot read the HTTP API tokens");
        ApiError::unavailable("cannot check the API token right now")
    })?;
    if known.is_empty() && state.access.loopback_only {
        return Ok(());
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer);
    let Some(token) = presented else {
        return Err(ApiError::unauthorized(if known.is_empty() {
            "this API listens beyond loopback and no token exists: create one with \
             `gantry tokens create --name NAME` and send `Authorization: Bearer <token>`"
        } else {
            "missing `Authorization: Bearer <token>` (tokens come from `gantry tokens create`)"
        }));
    };
    let Some(record) = tokens::find(&known, token) else {
        return Err(ApiError::unauthorized("unknown or revoked API token"));
    };
    let reads = matches!(*request.method(), Method::GET | Method::HEAD);
    if record.read_only && !reads {
        return Err(ApiError::forbidden(format!(
            "token {:?} is read-only: it may only GET",
            record.name
        )));
    }
    Ok(())
}

/// The token of `Authorization: Bearer <token>` (any case of the scheme).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A `POST`, or a request with a body, must be JSON.
fn check_content_type(request: &Request) -> Result<(), ApiError> {
    let headers = request.headers();
    let has_body = headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() != b"0");
    if !has_body {
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
        Err(ApiError::unsupported_media_type(
            "a request body must be Content-Type: application/json",
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
    use super::*;

    #[test]
    fn hosts_split_into_lowercase_name_and_port() {
        assert_eq!(
            split_host("LocalHost:4080"),
            Some(("localhost".into(), Some(4080)))
        );
        assert_eq!(split_host("[::1]:80"), Some(("::1".into(), Some(80))));
        assert_eq!(split_host("evil.com/x"), None);
        assert_eq!(split_host("user@localhost"), None);
    }

    #[test]
    fn a_bearer_token_is_read_whatever_the_scheme_case() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
    }
}

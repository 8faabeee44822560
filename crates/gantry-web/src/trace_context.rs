//! The W3C Trace Context `traceparent` header a request may carry: kept
//! with the turn it starts so the turn's trace continues the caller's.
//! The check itself is `gantry_types::trace_context`, shared with the
//! adapters that carry it elsewhere than in a header.

use axum::http::HeaderMap;

/// The request's `traceparent`, when it is one the W3C format allows
/// (`00-{32 hex trace id}-{16 hex span id}-{2 hex flags}`, neither id all
/// zeros), lowercased; anything else is ignored, as the specification asks.
pub fn traceparent(headers: &HeaderMap) -> Option<String> {
    gantry_types::trace_context::parse(headers.get("traceparent")?.to_str().ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_taken_only_when_well_formed() {
        let mut headers = HeaderMap::new();
        assert_eq!(traceparent(&headers), None);
        headers.insert(
            "traceparent",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"
                .parse()
                .expect("a header value"),
        );
        assert_eq!(
            traceparent(&headers).as_deref(),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        );
        headers.insert("traceparent", "00-0-0-01".parse().expect("a header value"));
        assert_eq!(traceparent(&headers), None);
    }
}

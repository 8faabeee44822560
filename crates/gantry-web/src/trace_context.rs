//! The W3C Trace Context `traceparent` header a request may carry: kept
//! with the turn it starts so the turn's trace continues the caller's.

use axum::http::HeaderMap;

/// The request's `traceparent`, when it is one the W3C format allows
/// (`00-{32 hex trace id}-{16 hex span id}-{2 hex flags}`, neither id all
/// zeros); anything else is ignored, as the specification asks.
pub fn traceparent(headers: &HeaderMap) -> Option<String> {
    let value = headers.get("traceparent")?.to_str().ok()?.trim();
    valid(value).then(|| value.to_ascii_lowercase())
}

/// Whether `value` is a well-formed version-00 `traceparent`.
pub fn valid(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let [version, trace, span, flags] = parts[..] else {
        return false;
    };
    let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
    let zero = |s: &str| s.bytes().all(|b| b == b'0');
    version == "00"
        && hex(trace, 32)
        && !zero(trace)
        && hex(span, 16)
        && !zero(span)
        && hex(flags, 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_well_formed_traceparent_is_taken() {
        assert!(valid(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473x-00f067aa0ba902b7-01",
        ] {
            assert!(!valid(bad), "{bad}");
        }
    }
}

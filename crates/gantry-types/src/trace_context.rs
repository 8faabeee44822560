//! The W3C Trace Context `traceparent` a request may carry, whichever
//! protocol brings it (an HTTP header, gRPC metadata, a JSON-RPC `_meta`):
//! kept with the turn it starts so the turn's trace continues the caller's.
//! One check for every adapter, so none takes what another would refuse.

/// The `traceparent` to keep for `value`: trimmed and lowercased when it is
/// one the W3C format allows ([`valid`]); anything else is `None`, ignored
/// as the specification asks, never an error.
pub fn parse(value: &str) -> Option<String> {
    let value = value.trim();
    valid(value).then(|| value.to_ascii_lowercase())
}

/// Whether `value` is a well-formed version-00 `traceparent`:
/// `00-{32 hex trace id}-{16 hex span id}-{2 hex flags}`, neither id all
/// zeros.
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
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_kept_traceparent_is_trimmed_and_lowercased() {
        assert_eq!(
            parse(" 00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01 ").as_deref(),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        );
    }
}

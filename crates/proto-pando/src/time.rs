//! Times as Pando's Go code writes them: `time.Time` as RFC 3339 in UTC
//! (fraction trimmed), `time.Duration.String()` for uptimes.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};

/// A unix-milliseconds time as Go marshals a UTC `time.Time`.
pub(crate) fn rfc3339_ms(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Now, as Go marshals `time.Now().UTC()`.
pub(crate) fn now_rfc3339() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// `d` rounded to whole seconds, as Go's `Duration.String()` writes it
/// (`0s`, `42s`, `5m0s`, `1h30m0s`): Pando reports uptimes that way.
pub(crate) fn go_duration(d: Duration) -> String {
    let secs = d.as_secs() + u64::from(d.subsec_millis() >= 500);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_go_writes_them() {
        assert_eq!(go_duration(Duration::ZERO), "0s");
        assert_eq!(go_duration(Duration::from_millis(1_499)), "1s");
        assert_eq!(go_duration(Duration::from_millis(1_500)), "2s");
        assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
        assert_eq!(go_duration(Duration::from_secs(5_400)), "1h30m0s");
        assert_eq!(go_duration(Duration::from_secs(90_061)), "25h1m1s");
    }

    #[test]
    fn times_are_utc_rfc3339() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_ms(1_500), "1970-01-01T00:00:01.500Z");
        assert!(now_rfc3339().ends_with('Z'));
    }
}

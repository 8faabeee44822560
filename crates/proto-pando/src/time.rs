//! Times as Pando's Go code writes them: `time.Time` as RFC 3339 in UTC
//! (fraction trimmed), `time.Duration.String()` for uptimes; and
//! durations as `time.ParseDuration` reads them (a cron job's timeout).

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

/// A Go duration string (`30m`, `1h30m`, `1.5h`, `250ms`), as
/// `time.ParseDuration` reads it; `None` if it is not one or is negative.
pub(crate) fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    if rest.is_empty() || rest.starts_with('-') {
        return None;
    }
    rest = rest.strip_prefix('+').unwrap_or(rest);
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * seconds;
    }
    Duration::try_from_secs_f64(total).ok()
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
    fn durations_are_parsed_as_go_parses_them() {
        let secs = |t: &str| parse_go_duration(t).map(|d| d.as_secs_f64());
        assert_eq!(secs("30m"), Some(1800.0));
        assert_eq!(secs("1h30m"), Some(5400.0));
        assert_eq!(secs("1.5h"), Some(5400.0));
        assert_eq!(secs("250ms"), Some(0.25));
        assert_eq!(secs("2h45m10s"), Some(9910.0));
        assert_eq!(secs("0"), Some(0.0));
        for bad in ["", "10", "5 minutes", "-1m", "1d", "h"] {
            assert_eq!(parse_go_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn times_are_utc_rfc3339() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_ms(1_500), "1970-01-01T00:00:01.500Z");
        assert!(now_rfc3339().ends_with('Z'));
    }
}

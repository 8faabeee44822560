//! The replica's counters, and their Prometheus text exposition (format
//! 0.0.4), written by hand: a handful of series needs no client library.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the dispatch latency buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Counters kept as the control plane works.
#[derive(Default)]
pub(crate) struct Metrics {
    /// Dispatch round trips per bucket (not cumulative; the last is +Inf).
    dispatch: [AtomicU64; BUCKETS.len() + 1],
    /// Their sum, in microseconds.
    dispatch_micros: AtomicU64,
    /// Thread updates committed (log entries).
    updates_applied: AtomicU64,
}

/// What is read at scrape time rather than counted.
pub(crate) struct Gauges {
    /// Runners whose channel is open here.
    pub runners_connected: usize,
    /// Requests sent and waiting for their first reply.
    pub requests_in_flight: usize,
    /// Whether the replica is draining (stopping).
    pub draining: bool,
    /// Messages of the replica's NATS streams not yet delivered to it, when
    /// it runs with NATS.
    pub nats_lag: Option<u64>,
}

impl Metrics {
    /// A request answered after `took`.
    pub(crate) fn dispatched(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        let bucket = BUCKETS
            .iter()
            .position(|le| seconds <= *le)
            .unwrap_or(BUCKETS.len());
        self.dispatch[bucket].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.dispatch_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// `count` thread updates committed.
    pub(crate) fn applied(&self, count: usize) {
        self.updates_applied
            .fetch_add(count as u64, Ordering::Relaxed);
    }

    /// The exposition of every series.
    pub(crate) fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::with_capacity(2048);
        gauge(
            &mut out,
            "gantry_cp_runners_connected",
            "Runners whose control channel is open on this replica.",
            gauges.runners_connected as f64,
        );
        gauge(
            &mut out,
            "gantry_cp_requests_in_flight",
            "Requests sent to runners and waiting for their first reply.",
            gauges.requests_in_flight as f64,
        );
        gauge(
            &mut out,
            "gantry_cp_draining",
            "1 while this replica drains before stopping (it takes no new runners).",
            if gauges.draining { 1.0 } else { 0.0 },
        );
        if let Some(lag) = gauges.nats_lag {
            gauge(
                &mut out,
                "gantry_cp_nats_lag",
                "Messages of the thread-update stream not yet delivered to this replica.",
                lag as f64,
            );
        }
        let _ = writeln!(
            out,
            "# HELP gantry_cp_updates_applied_total Thread updates from runners committed to the store.\n\
             # TYPE gantry_cp_updates_applied_total counter\n\
             gantry_cp_updates_applied_total {}",
            self.updates_applied.load(Ordering::Relaxed)
        );
        let name = "gantry_cp_dispatch_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Round trip of a request to a runner: sent, its first reply recorded.\n\
             # TYPE {name} histogram"
        );
        let mut cumulative = 0;
        for (i, count) in self.dispatch.iter().enumerate() {
            cumulative += count.load(Ordering::Relaxed);
            let le = BUCKETS
                .get(i)
                .map_or_else(|| "+Inf".to_owned(), f64::to_string);
            let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {cumulative}");
        }
        let sum = self.dispatch_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {cumulative}");
        out
    }
}

/// One gauge with its help and type lines.
fn gauge(out: &mut String, name: &str, help: &str, value: f64) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_is_cumulative_and_counts_every_round_trip() {
        let metrics = Metrics::default();
        metrics.dispatched(Duration::from_micros(300));
        metrics.dispatched(Duration::from_millis(3));
        metrics.dispatched(Duration::from_secs(60));
        metrics.applied(5);
        let text = metrics.render(&Gauges {
            runners_connected: 2,
            requests_in_flight: 1,
            draining: false,
            nats_lag: None,
        });
        for line in [
            "gantry_cp_runners_connected 2",
            "gantry_cp_requests_in_flight 1",
            "gantry_cp_updates_applied_total 5",
            "gantry_cp_dispatch_seconds_bucket{le=\"0.0005\"} 1",
            "gantry_cp_dispatch_seconds_bucket{le=\"0.005\"} 2",
            "gantry_cp_dispatch_seconds_bucket{le=\"10\"} 2",
            "gantry_cp_dispatch_seconds_bucket{le=\"+Inf\"} 3",
            "gantry_cp_dispatch_seconds_count 3",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing in:\n{text}"
            );
        }
        assert!(!text.contains("nats_lag"));
    }
}

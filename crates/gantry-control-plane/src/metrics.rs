//! The replica's counters, and their Prometheus text exposition (format
//! 0.0.4, written by `gantry_web::prometheus`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use gantry_web::prometheus::{Exposition, Histogram};

/// Upper bounds of the dispatch latency buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Counters kept as the control plane works.
pub(crate) struct Metrics {
    /// Dispatch round trips, in seconds.
    dispatch: Mutex<Histogram>,
    /// Thread updates committed (log entries).
    updates_applied: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            dispatch: Mutex::new(Histogram::new(&BUCKETS)),
            updates_applied: AtomicU64::new(0),
        }
    }
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
        self.dispatch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .observe(took.as_secs_f64());
    }

    /// `count` thread updates committed.
    pub(crate) fn applied(&self, count: usize) {
        self.updates_applied
            .fetch_add(count as u64, Ordering::Relaxed);
    }

    /// The exposition of every series.
    pub(crate) fn render(&self, gauges: &Gauges) -> String {
        let one = |value: f64| [(vec![], value)];
        let mut out = Exposition::default();
        out.gauge(
            "gantry_cp_runners_connected",
            "Runners whose control channel is open on this replica.",
            one(gauges.runners_connected as f64),
        );
        out.gauge(
            "gantry_cp_requests_in_flight",
            "Requests sent to runners and waiting for their first reply.",
            one(gauges.requests_in_flight as f64),
        );
        out.gauge(
            "gantry_cp_draining",
            "1 while this replica drains before stopping (it takes no new runners).",
            one(if gauges.draining { 1.0 } else { 0.0 }),
        );
        if let Some(lag) = gauges.nats_lag {
            out.gauge(
                "gantry_cp_nats_lag",
                "Messages of the thread-update stream not yet delivered to this replica.",
                one(lag as f64),
            );
        }
        out.counter(
            "gantry_cp_updates_applied_total",
            "Thread updates from runners committed to the store.",
            one(self.updates_applied.load(Ordering::Relaxed) as f64),
        );
        let dispatch = self
            .dispatch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        out.histogram(
            "gantry_cp_dispatch_seconds",
            "Round trip of a request to a runner: sent, its first reply recorded.",
            &dispatch,
        );
        out.into_text()
    }
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

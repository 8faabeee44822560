//! The time port, so tests and replays can control timestamps.

use std::time::{SystemTime, UNIX_EPOCH};

/// Tells the time in unix milliseconds.
pub trait Clock: Send + Sync {
    /// Now, in milliseconds since the unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }
}

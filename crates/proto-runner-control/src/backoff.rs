//! Reconnect delays: exponential with full jitter, so runners cut off
//! together do not reconnect together.

use std::time::Duration;

/// The delay before the next attempt.
#[derive(Debug, Clone)]
pub struct Backoff {
    /// First delay's upper bound.
    pub initial: Duration,
    /// Largest upper bound.
    pub max: Duration,
    attempt: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(Duration::from_millis(250), Duration::from_secs(30))
    }
}

impl Backoff {
    /// Delays growing from `initial` up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            max,
            attempt: 0,
        }
    }

    /// The next delay: uniformly random up to `initial * 2^attempt`, capped.
    pub fn next_delay(&mut self) -> Duration {
        let ceiling = self
            .initial
            .saturating_mul(1 << self.attempt.min(16))
            .min(self.max);
        self.attempt = self.attempt.saturating_add(1);
        let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        // At least a millisecond, so a loop of failures never spins.
        Duration::from_millis(fastrand::u64(1..=millis.max(1)))
    }

    /// After a connection that worked: start again from `initial`.
    pub fn reset(&mut self) {
        self.attempt = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_to_the_cap_and_reset() {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(800));
        let ceilings = [100, 200, 400, 800, 800, 800];
        for ceiling in ceilings {
            let delay = backoff.next_delay();
            assert!(
                delay <= Duration::from_millis(ceiling),
                "{delay:?} > {ceiling}"
            );
            assert!(delay >= Duration::from_millis(1));
        }
        backoff.reset();
        assert!(backoff.next_delay() <= Duration::from_millis(100));
    }
}

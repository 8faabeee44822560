//! When and how long to wait before retrying a failed model request.

use std::time::Duration;

use crate::ModelError;

/// Exponential backoff with full jitter, capped, honouring Retry-After.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Delay scale of the first retry.
    pub base_delay: Duration,
    /// No computed delay exceeds this (a server's Retry-After may, up to `max_retry_after`).
    pub max_delay: Duration,
    /// The longest Retry-After honoured; longer ones fail the request instead.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `attempt` (1-based) after `error`, or
    /// `None` if the error is final or the retries are used up.
    pub fn delay(&self, attempt: u32, error: &ModelError) -> Option<Duration> {
        if attempt > self.max_retries || !error.is_retryable() {
            return None;
        }
        if let ModelError::RateLimited {
            retry_after: Some(after),
            ..
        } = error
        {
            return (*after <= self.max_retry_after).then_some(*after);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << (attempt - 1).min(16))
            .min(self.max_delay);
        // Full jitter: spread retries of many clients over [exp/2, exp].
        let half = exp / 2;
        Some(half + half.mul_f64(fastrand::f64()))
    }
}

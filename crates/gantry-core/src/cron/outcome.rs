//! How one run of a job ended, whatever it ran.

use std::time::Duration;

use gantry_tools::HeadTail;
use gantry_types::TurnId;
use gantry_types::cron::ExecutionStatus;

/// The result of running a job's action once.
#[derive(Debug)]
pub(super) struct Outcome {
    pub status: ExecutionStatus,
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub error: Option<String>,
    pub turn_id: Option<TurnId>,
}

impl Outcome {
    /// A run that failed before it produced anything.
    pub(super) fn failed(error: String) -> Self {
        Self {
            status: ExecutionStatus::Failed,
            exit_code: None,
            stdout: String::new(),
            stderr: String::new(),
            error: Some(error),
            turn_id: None,
        }
    }
}

/// Bytes kept of each of a run's stdout and stderr (head and tail halves).
pub(super) const MAX_OUTPUT_BYTES: usize = 32 * 1024;

/// `text` cut to [`MAX_OUTPUT_BYTES`], with a marker where it was cut.
pub(super) fn capped(text: &str) -> String {
    let mut kept = HeadTail::new(MAX_OUTPUT_BYTES);
    kept.push(text.as_bytes());
    kept.finish()
}

/// A duration for humans: `2 s`, `1.5 s`, `250 ms`.
pub(super) fn fmt_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

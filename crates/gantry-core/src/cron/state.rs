//! The engine's scheduled-jobs state: which jobs are running (so a job
//! never runs twice at once, and a delete can stop its run), the lock that
//! serializes changes to job rows, and the scheduler's wake-up call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Shared by the job API, the runs and the scheduler.
#[derive(Default)]
pub(crate) struct CronState {
    /// Held around every read-modify-write of a job row, so a run's
    /// bookkeeping never overwrites an update made while it ran.
    pub(super) rows: tokio::sync::Mutex<()>,
    /// Jobs with a run in progress: what cancels it, what it was due for.
    running: Arc<Mutex<HashMap<String, Run>>>,
    /// Wakes the scheduler to look at the jobs again.
    pub(super) wake: Notify,
}

/// A run in progress.
struct Run {
    cancel: CancellationToken,
    /// The due time the scheduler started it for; `None` for a manual run.
    due: Option<i64>,
}

/// A job's claim to run; the job is free again when it is dropped.
pub(super) struct Claim {
    job_id: String,
    running: Arc<Mutex<HashMap<String, Run>>>,
}

impl CronState {
    /// Claims `job_id` for a run cancelled by `cancel`, started for the due
    /// time `due` (`None`: by hand); `None` if it is already running.
    pub(super) fn claim(
        &self,
        job_id: &str,
        cancel: CancellationToken,
        due: Option<i64>,
    ) -> Option<Claim> {
        let mut running = lock(&self.running);
        if running.contains_key(job_id) {
            return None;
        }
        running.insert(job_id.to_owned(), Run { cancel, due });
        Some(Claim {
            job_id: job_id.to_owned(),
            running: self.running.clone(),
        })
    }

    /// True while a run of `job_id` is in progress.
    pub(super) fn is_running(&self, job_id: &str) -> bool {
        lock(&self.running).contains_key(job_id)
    }

    /// True while the run of `job_id` in progress is the one the scheduler
    /// started for the due time `due` (it may not have recorded itself yet).
    pub(super) fn runs_for(&self, job_id: &str, due: i64) -> bool {
        lock(&self.running)
            .get(job_id)
            .is_some_and(|run| run.due == Some(due))
    }

    /// Cancels the run of `job_id`, if one is in progress.
    pub(super) fn cancel(&self, job_id: &str) {
        if let Some(run) = lock(&self.running).get(job_id) {
            run.cancel.cancel();
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        lock(&self.running).remove(&self.job_id);
    }
}

fn lock(running: &Mutex<HashMap<String, Run>>) -> MutexGuard<'_, HashMap<String, Run>> {
    // The map is changed by single inserts and removes: never half-changed.
    running
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

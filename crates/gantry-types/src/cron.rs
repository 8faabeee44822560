//! Scheduled jobs and their runs (seed 001 `CronJob`, `CronExecution`).
//!
//! A job runs a shell command or sends a prompt to a thread on a cron
//! schedule. Each run is a [`CronExecution`] in the job's history.

use serde::{Deserialize, Serialize};

use crate::{ThreadId, TurnId};

/// A job's time limit when none is given: one minute.
pub const DEFAULT_JOB_TIMEOUT_MS: u64 = 60_000;

/// A scheduled job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronJob {
    /// Unique id (UUIDv7).
    pub id: String,
    /// Unique, human-readable name.
    pub name: String,
    /// The cron expression it runs on: 5 fields (minute hour day-of-month
    /// month day-of-week), or 6 with a leading seconds field.
    pub schedule: String,
    /// The schedule in words ("Every 15 minutes").
    pub description: String,
    /// What it runs.
    pub action: JobAction,
    /// Time limit of one run, in milliseconds.
    pub timeout_ms: u64,
    /// Active, paused or running.
    pub status: JobStatus,
    /// Creation time (ms since the Unix epoch).
    pub created_at: i64,
    /// Last change of its definition or status (ms since the Unix epoch).
    pub updated_at: i64,
    /// When its last run started, if it ever ran.
    pub last_run: Option<i64>,
    /// When the scheduler runs it next; `None` while paused.
    pub next_run: Option<i64>,
    /// Runs that succeeded.
    pub run_count: u64,
    /// Runs that failed, timed out or were cancelled.
    pub fail_count: u64,
}

impl CronJob {
    /// The seed's `command` field: the shell command, or a prompt job's prompt.
    pub fn command_text(&self) -> &str {
        match &self.action {
            JobAction::Command { command, .. } => command,
            JobAction::Prompt { prompt, .. } => prompt,
        }
    }

    /// The seed's `working_dir` field: a command job's directory.
    pub fn working_dir(&self) -> Option<&str> {
        match &self.action {
            JobAction::Command { cwd, .. } => cwd.as_deref(),
            JobAction::Prompt { .. } => None,
        }
    }
}

/// What a job runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobAction {
    /// `sh -c COMMAND` in its own process group.
    Command {
        /// The command line.
        command: String,
        /// Directory to run in; the server's working directory when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
    },
    /// A user message to a thread (queued if a turn is running); the run
    /// lasts until that turn ends.
    Prompt {
        /// The thread.
        thread_id: ThreadId,
        /// The message.
        prompt: String,
    },
}

/// Whether the scheduler runs a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Runs on its schedule.
    Active,
    /// Does not run on its schedule (a manual run still works).
    Paused,
    /// A run is in progress.
    Running,
}

/// One run of a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronExecution {
    /// Unique id (UUIDv7).
    pub id: String,
    /// The job that ran.
    pub job_id: String,
    /// How it went.
    pub status: ExecutionStatus,
    /// What started it.
    pub trigger: ExecutionTrigger,
    /// Start time (ms since the Unix epoch).
    pub started_at: i64,
    /// End time; `None` while running.
    pub ended_at: Option<i64>,
    /// How long it ran; `None` while running.
    pub duration_ms: Option<u64>,
    /// The command's exit code, when it exited on its own.
    pub exit_code: Option<i32>,
    /// Standard output (a prompt job's final answer), truncated in the
    /// middle with a `[... N bytes truncated ...]` marker when too long.
    pub stdout: String,
    /// Standard error, truncated the same way.
    pub stderr: String,
    /// Why it did not succeed.
    pub error: Option<String>,
    /// A prompt job's turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
}

/// How a run ended (or that it has not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// Still running.
    Running,
    /// Exit code 0 / the turn completed.
    Success,
    /// A non-zero exit, a signal, a failed turn, or it could not start.
    Failed,
    /// Killed (with its whole process group) at its time limit.
    Timeout,
    /// Stopped by a delete, a scheduler stop, or an interrupt of its turn;
    /// or left running when the server stopped.
    Cancelled,
}

impl ExecutionStatus {
    /// True once the run has ended.
    pub fn is_final(self) -> bool {
        self != Self::Running
    }
}

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionTrigger {
    /// Its schedule came due.
    Schedule,
    /// A run the server missed while it was down, run once at start.
    Missed,
    /// Run now through the API.
    Manual,
}

/// A job event for the engine-wide stream. Jobs and runs are boxed to keep
/// the event small to move.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum CronEvent {
    /// A job was created.
    Created {
        /// The job.
        job: Box<CronJob>,
    },
    /// A job's definition or status changed (update, pause, resume).
    Updated {
        /// The job as it now is.
        job: Box<CronJob>,
    },
    /// A job was deleted, with its history.
    Deleted {
        /// Its id.
        job_id: String,
        /// Its name.
        name: String,
    },
    /// A run started.
    Started {
        /// The run so far.
        execution: Box<CronExecution>,
    },
    /// A run ended.
    Finished {
        /// The finished run.
        execution: Box<CronExecution>,
    },
}

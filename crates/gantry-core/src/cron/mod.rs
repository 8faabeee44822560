//! Scheduled jobs: schedules (cron and plain English), running one job
//! (a shell command in its own process group, or a prompt on a thread), the
//! scheduler that runs due jobs, and their API on the engine.

mod api;
mod command;
mod execute;
mod outcome;
mod prompt;
mod schedule;
mod scheduler;
mod state;
mod validate;

pub use api::{DEFAULT_HISTORY_LIMIT, JobUpdate, Jobs, NewJob};
pub use schedule::ParsedSchedule;
pub use scheduler::SchedulerHandle;
pub(crate) use state::CronState;

//! What the SQL stores read, turned into types: each query's columns and
//! their mapping, once for both backends. Stored JSON is opened with the
//! store's [`Sealer`] first (API keys are sealed at rest).

use gantry_types::cron::{CronExecution, CronJob, ExecutionStatus};
use gantry_types::{Agent, Event, ProviderConfig, Thread, ThreadId};
use serde::de::DeserializeOwned;

use crate::codec::{decode_event, decode_thread};
use crate::secrets::Sealer;
use crate::{StoreError, ThreadPage};

/// Columns of `sql::THREAD_EVENTS`: seq, ts, turn_id, item_id, payload, pos.
pub(crate) type EventCols = (
    i64,
    i64,
    Option<String>,
    Option<String>,
    String,
    Option<i64>,
);

/// Columns of `sql::EVENTS_AFTER`: thread_id, then those of [`EventCols`].
pub(crate) type AllEventCols = (
    String,
    i64,
    i64,
    Option<String>,
    Option<String>,
    String,
    Option<i64>,
);

/// A row's key (an id or a name) and its JSON: threads, providers, agents,
/// jobs and executions are stored so.
pub(crate) type DataRow = (String, String);

/// One thread's events.
pub(crate) fn events(
    thread: &ThreadId,
    rows: Vec<EventCols>,
    sealer: &Sealer,
) -> Result<Vec<Event>, StoreError> {
    rows.into_iter()
        .map(|(seq, ts, turn, item, payload, pos)| {
            let payload = sealer.open_json(&payload);
            decode_event(thread.clone(), seq, ts, turn, item, &payload, pos)
        })
        .collect()
}

/// A page of every thread's events; unreadable rows are reported and left out.
pub(crate) fn events_after(rows: Vec<AllEventCols>, sealer: &Sealer) -> Vec<Event> {
    rows.into_iter()
        .filter_map(|(thread, seq, ts, turn, item, payload, pos)| {
            let payload = sealer.open_json(&payload);
            match decode_event(ThreadId(thread), seq, ts, turn, item, &payload, pos) {
                Ok(event) => Some(event),
                Err(e) => {
                    tracing::error!(error = %e, "leaving an unreadable event out of a replay");
                    None
                }
            }
        })
        .collect()
}

/// A thread's row.
pub(crate) fn thread((id, data): &DataRow, sealer: &Sealer) -> Result<Thread, StoreError> {
    decode_thread(id, &sealer.open_json(data))
}

/// A page of threads from `limit + 1` rows fetched: the extra one only
/// says that more exist.
pub(crate) fn thread_page(rows: &[DataRow], limit: usize, sealer: &Sealer) -> ThreadPage {
    let more = rows.len() > limit;
    let page = &rows[..rows.len().min(limit)];
    // A row that cannot be read is left out and reported: one bad thread
    // must not hide every other from a listing.
    let threads = page
        .iter()
        .filter_map(|row| match thread(row, sealer) {
            Ok(thread) => Some(thread),
            Err(e) => {
                tracing::error!(thread = %row.0, error = %e, "leaving an unreadable thread out of a listing");
                None
            }
        })
        .collect();
    let next_cursor = if more {
        page.last().map(|(id, _)| id.clone())
    } else {
        None
    };
    ThreadPage {
        threads,
        next_cursor,
    }
}

/// A provider's row (its name and sealed JSON).
pub(crate) fn provider(
    (name, data): &DataRow,
    sealer: &Sealer,
) -> Result<ProviderConfig, StoreError> {
    keyed_json(
        "provider",
        name,
        &sealer.open_json(data),
        |p: &ProviderConfig| &p.name,
    )
}

/// An agent's row.
pub(crate) fn agent((id, data): &DataRow) -> Result<Agent, StoreError> {
    keyed_json("agent", id, data, |a: &Agent| a.id.as_str())
}

/// A scheduled job's row.
pub(crate) fn job((id, data): &DataRow) -> Result<CronJob, StoreError> {
    keyed_json("job", id, data, |j: &CronJob| &j.id)
}

/// A job execution's row.
pub(crate) fn execution((id, data): &DataRow) -> Result<CronExecution, StoreError> {
    keyed_json("execution", id, data, |e: &CronExecution| &e.id)
}

/// The `what` stored under `key` as JSON `data`, which must hold that same
/// key (`held` reads it), or the row is corrupt.
fn keyed_json<T: DeserializeOwned>(
    what: &str,
    key: &str,
    data: &str,
    held: impl Fn(&T) -> &str,
) -> Result<T, StoreError> {
    let value: T = serde_json::from_str(data)
        .map_err(|e| StoreError::Corrupt(format!("{what} {key}: data: {e}")))?;
    let held = held(&value);
    if held != key {
        return Err(StoreError::Corrupt(format!(
            "{what} {key}: data holds {what} {held}"
        )));
    }
    Ok(value)
}

/// The `status` column value of an execution status.
pub(crate) fn execution_status_name(status: ExecutionStatus) -> &'static str {
    // Exhaustive on purpose: a new status must choose its stored name here.
    match status {
        ExecutionStatus::Running => "running",
        ExecutionStatus::Success => "success",
        ExecutionStatus::Failed => "failed",
        ExecutionStatus::Timeout => "timeout",
        ExecutionStatus::Cancelled => "cancelled",
    }
}

/// A count or limit as a BIGINT (saturating: nothing asks for more).
pub(crate) fn count_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

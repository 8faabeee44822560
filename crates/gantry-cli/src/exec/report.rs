//! `gantry exec --report FILE`: how the run ended, as JSON a harness reads
//! (Harbor's installed-agent adapter in clients/harbor/ does): written
//! however the run ends, also when it fails before its turn starts.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use gantry_types::{ItemKind, ThreadGoalStatus, ThreadView, TurnFailure, TurnStatus, Usage};

/// The report's `schema`: its shape, versioned.
pub(crate) const SCHEMA: &str = "gantry.run_report.v1";

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// The model gave its final answer.
    Completed,
    /// An error stopped it (`reason` says which).
    Failed,
    /// Ctrl-C (or a signal) stopped it.
    Interrupted,
    /// A limit stopped it: the round limit or the thread goal's token
    /// budget (`limit` says which).
    BudgetExceeded,
}

/// The report, as written.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunReport {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The gantry that ran it.
    pub gantry_version: &'static str,
    /// How it ended.
    pub outcome: Outcome,
    /// Why it failed or was stopped, in a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The kind of failure, when the turn failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<TurnFailure>,
    /// `max_rounds` or `token_budget`, when a limit stopped it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<&'static str>,
    /// The thread, once it exists.
    pub thread_id: Option<String>,
    /// The turn, once it started.
    pub turn_id: Option<String>,
    /// The model the turn ran with.
    pub model: Option<String>,
    /// Tokens the turn used.
    pub usage: Usage,
    /// What they cost in USD (0 when the model's price is unknown).
    pub cost_usd: f64,
    /// Wall time of the whole run, start to report.
    pub wall_time_ms: u64,
    /// Model rounds run.
    pub rounds: u32,
    /// The agent's last message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_message: Option<String>,
    /// Where the ATIF trajectory was written (`--trajectory`), if it was.
    pub trajectory: Option<PathBuf>,
    /// The exit code gantry exits with.
    pub exit_code: u8,
}

/// What the run learned for its report as it went.
#[derive(Debug)]
pub(crate) struct Reporter {
    started: Instant,
    /// The thread, once known.
    pub thread_id: Option<String>,
    /// The turn, once started.
    pub turn_id: Option<String>,
    /// The turn's model.
    pub model: Option<String>,
    /// The trajectory's path, once written.
    pub trajectory: Option<PathBuf>,
    ended: Option<Ended>,
}

/// How the turn ended, from the thread's view.
#[derive(Debug)]
struct Ended {
    outcome: Outcome,
    reason: Option<String>,
    failure: Option<TurnFailure>,
    limit: Option<&'static str>,
    usage: Usage,
    cost_usd: f64,
    rounds: u32,
    final_message: Option<String>,
}

impl Reporter {
    /// A run starting now.
    pub(crate) fn start() -> Self {
        Reporter {
            started: Instant::now(),
            thread_id: None,
            turn_id: None,
            model: None,
            trajectory: None,
            ended: None,
        }
    }

    /// The turn ended as `view` shows it; `max_rounds` tells a round limit
    /// from another failure.
    pub(crate) fn turn_ended(&mut self, view: &ThreadView, max_rounds: u32) {
        let Some(tv) = self
            .turn_id
            .as_deref()
            .and_then(|id| view.turns.iter().find(|t| t.turn.id.as_str() == id))
        else {
            return;
        };
        let turn = &tv.turn;
        let errors: Vec<&str> = tv
            .items
            .iter()
            .filter_map(|i| match &i.kind {
                ItemKind::Error { message } => Some(message.as_str()),
                _ => None,
            })
            .collect();
        let budget_stop = turn.status == TurnStatus::Completed
            && !errors.is_empty()
            && view
                .thread
                .goal
                .as_ref()
                .is_some_and(|g| g.status == ThreadGoalStatus::BudgetLimited);
        let round_stop = turn.status == TurnStatus::Failed
            && turn.failure == Some(TurnFailure::Other)
            && turn.rounds >= max_rounds;
        let (outcome, limit) = match turn.status {
            _ if budget_stop => (Outcome::BudgetExceeded, Some("token_budget")),
            _ if round_stop => (Outcome::BudgetExceeded, Some("max_rounds")),
            TurnStatus::Completed => (Outcome::Completed, None),
            TurnStatus::Interrupted => (Outcome::Interrupted, None),
            TurnStatus::Failed | TurnStatus::Running => (Outcome::Failed, None),
        };
        let reason = match outcome {
            Outcome::Completed => None,
            _ => turn
                .error
                .clone()
                .or_else(|| errors.last().map(|e| (*e).to_owned())),
        };
        let final_message = tv.items.iter().rev().find_map(|i| match &i.kind {
            ItemKind::AgentMessage { text } if !text.is_empty() => Some(text.clone()),
            _ => None,
        });
        self.model = turn
            .model
            .clone()
            .or_else(|| Some(view.thread.model.clone()));
        self.ended = Some(Ended {
            outcome,
            reason,
            failure: turn.failure,
            limit,
            usage: turn.usage,
            cost_usd: turn.cost_usd,
            rounds: turn.rounds,
            final_message,
        });
    }

    /// The report of a run that ended with `result`.
    pub(crate) fn report(&self, result: &Result<std::process::ExitCode>) -> RunReport {
        let elapsed = self.started.elapsed().as_millis() as u64;
        let base = |outcome, reason| RunReport {
            schema: SCHEMA,
            gantry_version: env!("CARGO_PKG_VERSION"),
            outcome,
            reason,
            failure: None,
            limit: None,
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id.clone(),
            model: self.model.clone(),
            usage: Usage::default(),
            cost_usd: 0.0,
            wall_time_ms: elapsed,
            rounds: 0,
            final_message: None,
            trajectory: self.trajectory.clone(),
            exit_code: 1,
        };
        let mut report = match (&self.ended, result) {
            // Whatever the turn said, an error after it (the store) is why
            // the run failed.
            (_, Err(e)) => base(Outcome::Failed, Some(format!("{e:#}"))),
            (Some(e), Ok(_)) => RunReport {
                failure: e.failure,
                limit: e.limit,
                usage: e.usage,
                cost_usd: e.cost_usd,
                rounds: e.rounds,
                final_message: e.final_message.clone(),
                ..base(e.outcome, e.reason.clone())
            },
            // Ended before the turn did: Ctrl-C while the log could not be saved.
            (None, Ok(_)) => base(
                Outcome::Interrupted,
                Some("interrupted before the turn ended".to_owned()),
            ),
        };
        // The code `gantry exec` exits with for each outcome (see `exec::turn`).
        report.exit_code = match (result, report.outcome) {
            (Err(_), _) => 1,
            (Ok(_), Outcome::Completed) => 0,
            // A budget stop completes the turn; a round limit fails it.
            (Ok(_), Outcome::BudgetExceeded) if report.limit == Some("token_budget") => 0,
            (Ok(_), Outcome::Interrupted) => 130,
            (Ok(_), Outcome::Failed | Outcome::BudgetExceeded) => 1,
        };
        report
    }
}

/// Writes the report to `path`, whole or not at all.
pub(crate) fn write(path: &Path, report: &RunReport) -> Result<()> {
    let mut json = serde_json::to_vec_pretty(report)?;
    json.push(b'\n');
    crate::trajectory::write_atomic(path, &json)
}

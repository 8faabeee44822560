//! A prompt job's run: the prompt goes to its thread as a user message
//! (queued behind a running turn), and the run lasts until that turn ends.
//! The turn's final answer is the run's stdout.

use std::time::Duration;

use gantry_types::cron::ExecutionStatus;
use gantry_types::{ItemKind, ThreadId, TurnId, TurnStatus};
use tokio_util::sync::CancellationToken;

use super::outcome::{Outcome, capped, fmt_duration};
use crate::{Engine, IfBusy};

/// How the wait for the turn ended.
enum End {
    Turn(Result<TurnStatus, String>),
    TimedOut,
    Cancelled,
}

/// Sends `prompt` to `thread` and waits for its turn, at most `timeout`.
pub(super) async fn run_prompt(
    engine: &Engine,
    thread: &ThreadId,
    prompt: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Outcome {
    // Nobody is there to answer a question: the turn is not offered one.
    let turn = match engine
        .turns()
        .send_unattended(thread, prompt.into(), IfBusy::Queue)
        .await
    {
        Ok(turn) => turn,
        Err(e) => return Outcome::failed(format!("cannot send the prompt: {e}")),
    };
    let end = tokio::select! {
        biased;
        _ = cancel.cancelled() => End::Cancelled,
        _ = tokio::time::sleep(timeout) => End::TimedOut,
        ended = engine.turns().wait(thread, &turn) => End::Turn(
            ended.map(|t| t.status).map_err(|e| format!("lost thread {thread}'s turn: {e}")),
        ),
    };
    let stopped = match end {
        End::Turn(_) => String::new(),
        End::TimedOut | End::Cancelled => stop_turn(engine, thread, &turn).await,
    };
    let mut outcome = describe_turn(engine, thread, &turn).await;
    match end {
        End::Turn(Ok(_)) => {}
        End::Turn(Err(e)) => {
            outcome.status = ExecutionStatus::Failed;
            outcome.error = Some(e);
        }
        End::TimedOut => {
            outcome.status = ExecutionStatus::Timeout;
            outcome.error = Some(format!(
                "timed out after {}; {stopped}",
                fmt_duration(timeout)
            ));
        }
        End::Cancelled => {
            outcome.status = ExecutionStatus::Cancelled;
            outcome.error = Some(format!("cancelled; {stopped}"));
        }
    }
    outcome
}

/// Interrupts `turn` if it is the one running; says what became of it.
async fn stop_turn(engine: &Engine, thread: &ThreadId, turn: &TurnId) -> String {
    let running = match engine.threads().read(thread).await {
        Ok(view) => view
            .turns
            .iter()
            .any(|t| &t.turn.id == turn && t.turn.status == TurnStatus::Running),
        Err(e) => return format!("the turn could not be checked: {e}"),
    };
    if !running {
        return "the message is still queued on the thread".to_owned();
    }
    match engine.turns().interrupt(thread).await {
        Ok(_) => "the turn was interrupted".to_owned(),
        Err(e) => format!("the turn could not be interrupted: {e}"),
    }
}

/// The outcome a turn's state gives: its final answer, its error.
async fn describe_turn(engine: &Engine, thread: &ThreadId, turn: &TurnId) -> Outcome {
    let view = match engine.threads().read(thread).await {
        Ok(view) => view,
        Err(e) => return Outcome::failed(format!("cannot read thread {thread}: {e}")),
    };
    let Some(tv) = view.turns.iter().find(|t| &t.turn.id == turn) else {
        // Still queued: it never started.
        let mut outcome = Outcome::failed(String::new());
        outcome.turn_id = Some(turn.clone());
        return outcome;
    };
    let answer = tv
        .items
        .iter()
        .rev()
        .find_map(|item| match &item.kind {
            ItemKind::AgentMessage { text } => Some(capped(text)),
            _ => None,
        })
        .unwrap_or_default();
    let (status, error) = match tv.turn.status {
        TurnStatus::Completed => (ExecutionStatus::Success, None),
        TurnStatus::Failed => (
            ExecutionStatus::Failed,
            Some(
                tv.turn
                    .error
                    .clone()
                    .unwrap_or_else(|| "the turn failed".to_owned()),
            ),
        ),
        TurnStatus::Interrupted => (
            ExecutionStatus::Cancelled,
            Some(
                tv.turn
                    .error
                    .clone()
                    .unwrap_or_else(|| "the turn was interrupted".to_owned()),
            ),
        ),
        TurnStatus::Running => (ExecutionStatus::Running, None),
    };
    Outcome {
        status,
        exit_code: None,
        stdout: answer,
        stderr: String::new(),
        error,
        turn_id: Some(turn.clone()),
    }
}

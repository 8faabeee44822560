//! Delegation protocol 2 of Pando's newer sources: `delegation.run` runs
//! a prompt as one turn in a thread of its own and answers with the turn's
//! last assistant message; `delegation.cancel` interrupts it by the
//! caller's correlation id; `delegation.status` says whether it is
//! running, completed (with the answer `delegation.run` gave, for a while
//! after) or unknown.
//!
//! The turn is unattended under the server's policy with approvals off:
//! the model is not offered questions to the user, and a call that would
//! need an approval is refused and the model told why (it shows in the
//! session's messages), so a delegation never waits for a human. As in
//! Pando, only completed delegations are remembered: one that failed or
//! was cancelled is `unknown` once its `delegation.run` has answered.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use gantry_core::{CreateThread, Engine, EngineError, IfBusy};
use gantry_types::{AgentId, ApprovalPolicy, ItemKind, ThreadId, ThreadPolicy, TurnId, TurnStatus};

use crate::service::Service;
use crate::wire::{DelegationRunParams, DelegationRunResult, DelegationStatusResult};

/// Completed delegations remembered at most (Pando's bound).
const RESULTS_KEPT: usize = 64;

/// How long a completed delegation is remembered (Pando's bound).
const RESULT_TTL: Duration = Duration::from_secs(30 * 60);

/// Pando's stop reason for a turn that ended normally.
const END_TURN: &str = "end_turn";

/// The instance's delegations, by correlation id.
#[derive(Default)]
pub(crate) struct Delegations {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    running: HashMap<String, Running>,
    completed: HashMap<String, (DelegationRunResult, Instant)>,
}

/// A delegation whose `delegation.run` has not answered yet.
#[derive(Default)]
struct Running {
    /// Its thread, once made.
    thread: Option<ThreadId>,
    /// Asked to stop: interrupted as soon as its turn has begun.
    cancelled: bool,
}

impl Delegations {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panicking writer cannot leave two maps inconsistent in a way
        // that matters more than losing the instance's delegations.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `delegation.run`: the turn run to its end; `Err` says why it did not
    /// complete.
    pub(crate) async fn run(
        &self,
        service: &Service,
        p: DelegationRunParams,
    ) -> Result<DelegationRunResult, String> {
        if p.prompt.trim().is_empty() {
            return Err("prompt is required".to_owned());
        }
        let key = p.correlation_id.clone();
        if !key.is_empty() {
            let mut state = self.state();
            if state.running.contains_key(&key) {
                return Err(format!("delegation {key:?} is already running"));
            }
            state.running.insert(key.clone(), Running::default());
        }
        let outcome = self.start_and_wait(service, &key, &p).await;
        // The result is kept before the delegation stops running: a status
        // read between the two never says `unknown`.
        let mut state = self.state();
        if let Ok(result) = &outcome
            && !key.is_empty()
        {
            remember(&mut state, key.clone(), result.clone());
        }
        state.running.remove(&key);
        outcome
    }

    /// Makes the delegation's thread, sends the prompt, waits for the turn.
    async fn start_and_wait(
        &self,
        service: &Service,
        key: &str,
        p: &DelegationRunParams,
    ) -> Result<DelegationRunResult, String> {
        let engine = service.engine();
        let create = CreateThread {
            cwd: service.inside(&p.cwd)?,
            model: Some(p.model.trim().to_owned()).filter(|m| !m.is_empty()),
            name: Some(title(key)),
            agent: persona(engine, &p.persona).await?,
            // The server's policy, with approvals off: nobody is there to
            // give one, so what would ask is refused and the model told.
            policy: ThreadPolicy {
                approval: ApprovalPolicy::Never,
                ..ThreadPolicy::default()
            },
            ..CreateThread::default()
        };
        let thread = engine
            .threads()
            .create(create)
            .await
            .map_err(|e| format!("delegated run: {e}"))?
            .id;
        if let Some(running) = self.state().running.get_mut(key) {
            running.thread = Some(thread.clone());
        }
        let turn = engine
            .turns()
            .send_unattended(&thread, p.prompt.as_str().into(), IfBusy::Reject)
            .await
            .map_err(|e| format!("delegated run: {e}"))?;
        // Cancelled before its turn began: the cancel found nothing to stop.
        if self.state().running.get(key).is_some_and(|r| r.cancelled) {
            let _ = engine.turns().interrupt(&thread).await;
        }
        let ended = engine
            .turns()
            .wait(&thread, &turn)
            .await
            .map_err(|e| format!("delegated run: {e}"))?;
        match ended.status {
            TurnStatus::Completed => Ok(DelegationRunResult {
                session_id: thread.0.clone(),
                output: answer(engine, &thread, &turn).await?,
                stop_reason: END_TURN.to_owned(),
            }),
            TurnStatus::Interrupted => Err("delegated run: cancelled".to_owned()),
            TurnStatus::Failed | TurnStatus::Running => Err(format!(
                "delegated run: {}",
                ended.error.unwrap_or_else(|| "the turn failed".to_owned())
            )),
        }
    }

    /// `delegation.cancel`: interrupts the delegation's turn, if it runs.
    pub(crate) async fn cancel(&self, engine: &Engine, key: &str) -> Result<(), EngineError> {
        let thread = {
            let mut state = self.state();
            let Some(running) = state.running.get_mut(key) else {
                return Ok(());
            };
            running.cancelled = true;
            // No thread yet: `run` interrupts the turn once it has begun.
            let Some(thread) = running.thread.clone() else {
                return Ok(());
            };
            thread
        };
        match engine.turns().interrupt(&thread).await {
            // Nothing runs yet: `run` interrupts the turn once it has begun.
            Ok(_) | Err(EngineError::ThreadNotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `delegation.status`.
    pub(crate) fn status(&self, key: &str) -> DelegationStatusResult {
        let mut state = self.state();
        if !key.is_empty() && state.running.contains_key(key) {
            return status("running", None);
        }
        expire(&mut state);
        match state.completed.get(key) {
            Some((result, _)) if !key.is_empty() => status("completed", Some(result)),
            _ => status("unknown", None),
        }
    }
}

/// The agent a persona names, by id or name.
async fn persona(engine: &Engine, persona: &str) -> Result<Option<AgentId>, String> {
    let persona = persona.trim();
    if persona.is_empty() {
        return Ok(None);
    }
    let agents = engine
        .agents()
        .list()
        .await
        .map_err(|e| format!("cannot read the agents: {e}"))?;
    agents
        .into_iter()
        .find(|a| a.id.as_str() == persona || a.name == persona)
        .map(|a| Some(a.id))
        .ok_or_else(|| format!("unknown persona {persona:?}: no Gantry agent has that id or name"))
}

/// The session's title, as Pando names a delegated session.
fn title(key: &str) -> String {
    if key.is_empty() {
        return "delegated task".to_owned();
    }
    let short: String = key.chars().take(12).collect();
    format!("delegated: {short}")
}

/// The turn's last assistant message.
async fn answer(engine: &Engine, thread: &ThreadId, turn: &TurnId) -> Result<String, String> {
    let view = engine
        .threads()
        .read(thread)
        .await
        .map_err(|e| format!("delegated run: {e}"))?;
    Ok(view
        .turns
        .iter()
        .find(|t| &t.turn.id == turn)
        .and_then(|t| {
            t.items.iter().rev().find_map(|item| match &item.kind {
                ItemKind::AgentMessage { text } => Some(text.clone()),
                _ => None,
            })
        })
        .unwrap_or_default())
}

/// Keeps a completed delegation's result, dropping expired ones and, at
/// the bound, the oldest.
fn remember(state: &mut State, key: String, result: DelegationRunResult) {
    expire(state);
    if !state.completed.contains_key(&key) && state.completed.len() >= RESULTS_KEPT {
        let oldest = state
            .completed
            .iter()
            .min_by_key(|(_, (_, at))| *at)
            .map(|(k, _)| k.clone());
        if let Some(oldest) = oldest {
            state.completed.remove(&oldest);
        }
    }
    state.completed.insert(key, (result, Instant::now()));
}

fn expire(state: &mut State) {
    state
        .completed
        .retain(|_, (_, at)| at.elapsed() <= RESULT_TTL);
}

fn status(state: &str, result: Option<&DelegationRunResult>) -> DelegationStatusResult {
    DelegationStatusResult {
        state: state.to_owned(),
        session_id: result.map(|r| r.session_id.clone()).unwrap_or_default(),
        output: result.map(|r| r.output.clone()).unwrap_or_default(),
        stop_reason: result.map(|r| r.stop_reason.clone()).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(n: usize) -> DelegationRunResult {
        DelegationRunResult {
            session_id: format!("s{n}"),
            output: format!("out {n}"),
            stop_reason: END_TURN.to_owned(),
        }
    }

    #[test]
    fn completed_results_are_kept_up_to_the_bound_oldest_dropped_first() {
        let delegations = Delegations::default();
        for n in 0..=RESULTS_KEPT {
            remember(&mut delegations.state(), format!("k{n}"), result(n));
        }
        assert_eq!(delegations.status("k0").state, "unknown");
        let last = delegations.status(&format!("k{RESULTS_KEPT}"));
        assert_eq!(last.state, "completed");
        assert_eq!(last.output, format!("out {RESULTS_KEPT}"));
        assert_eq!(delegations.status("k1").session_id, "s1");
        assert_eq!(delegations.status("").state, "unknown");
        assert_eq!(delegations.status("never").state, "unknown");
    }

    #[test]
    fn a_running_delegation_is_running_and_its_title_is_pandos() {
        let delegations = Delegations::default();
        delegations.state().running.insert(
            "corr-1".to_owned(),
            Running {
                thread: Some(ThreadId("t".to_owned())),
                cancelled: false,
            },
        );
        let running = delegations.status("corr-1");
        assert_eq!(running.state, "running");
        assert!(running.output.is_empty() && running.session_id.is_empty());
        assert_eq!(title(""), "delegated task");
        assert_eq!(title("0123456789abcdef"), "delegated: 0123456789ab");
    }
}

//! Rome sessions are Gantry threads. A channel thread key maps to one
//! session per agent, by a stable id derived from both (so it survives a
//! restart with nothing kept but the threads); a session runs one turn at
//! a time (a lock per session, held from the turn's start to its end), and
//! its running turn can be found by id for an interrupt.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use gantry_types::{ThreadId, TurnId};
use sha2::{Digest, Sha256};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// Thread metadata: the agent a session belongs to.
pub(crate) const AGENT_KEY: &str = "rome.agent";
/// Thread metadata: the channel thread key it runs under.
pub(crate) const THREAD_KEY: &str = "rome.channel_thread_key";
/// Thread metadata of a fork: its purpose (`label`).
pub(crate) const FORK_LABEL_KEY: &str = "rome.fork_label";
/// Thread metadata of a fork: the source turn that triggered it.
pub(crate) const PARENT_TURN_KEY: &str = "rome.parent_turn_id";

/// The session of `agent` under `key`.
pub(crate) fn keyed_session(agent: &str, key: &str) -> ThreadId {
    let mut hash = Sha256::new();
    hash.update(agent.as_bytes());
    hash.update([0]);
    hash.update(key.as_bytes());
    let hex: String = hash.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    ThreadId(format!("rome-{hex}"))
}

/// The sessions' locks and running turns.
#[derive(Default)]
pub(crate) struct Sessions {
    locks: Mutex<HashMap<ThreadId, Arc<AsyncMutex<()>>>>,
    running: Mutex<HashMap<TurnId, ThreadId>>,
}

/// A session's turn slot, held while its turn runs.
pub(crate) struct SessionSlot {
    sessions: Arc<Sessions>,
    thread: ThreadId,
    guard: Option<OwnedMutexGuard<()>>,
    turn: Option<TurnId>,
}

impl Sessions {
    /// Waits until `thread` runs no turn of ours, and holds it.
    pub(crate) async fn acquire(self: &Arc<Self>, thread: &ThreadId) -> SessionSlot {
        let lock = self
            .locks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(thread.clone())
            .or_default()
            .clone();
        let guard = lock.lock_owned().await;
        SessionSlot {
            sessions: self.clone(),
            thread: thread.clone(),
            guard: Some(guard),
            turn: None,
        }
    }

    /// The session running `turn`, if one of ours is.
    pub(crate) fn running(&self, turn: &TurnId) -> Option<ThreadId> {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(turn)
            .cloned()
    }
}

impl SessionSlot {
    /// Records the turn that runs in the slot, so it can be interrupted.
    pub(crate) fn running(&mut self, turn: &TurnId) {
        self.sessions
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(turn.clone(), self.thread.clone());
        self.turn = Some(turn.clone());
    }
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        if let Some(turn) = &self.turn {
            self.sessions
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(turn);
        }
        drop(self.guard.take());
        // The lock goes when nobody else holds or waits for it (they hold
        // a clone of it, taken under the map's lock).
        let mut locks = self
            .sessions
            .locks
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if locks
            .get(&self.thread)
            .is_some_and(|lock| Arc::strong_count(lock) == 1)
        {
            locks.remove(&self.thread);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_maps_to_one_valid_session_per_agent() {
        let a = keyed_session("main", "telegram:42");
        assert_eq!(a, keyed_session("main", "telegram:42"));
        assert_ne!(a, keyed_session("other", "telegram:42"));
        assert_ne!(a, keyed_session("main", "telegram:43"));
        assert!(gantry_core::valid_thread_id(a.as_str()), "{a}");
    }

    #[tokio::test]
    async fn a_session_runs_one_turn_at_a_time_and_forgets_idle_locks() {
        let sessions = Arc::new(Sessions::default());
        let thread = ThreadId::from("s");
        let mut first = sessions.acquire(&thread).await;
        let turn = TurnId::new();
        first.running(&turn);
        assert_eq!(sessions.running(&turn), Some(thread.clone()));
        let waiting = tokio::spawn({
            let sessions = sessions.clone();
            let thread = thread.clone();
            async move { drop(sessions.acquire(&thread).await) }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(first);
        waiting.await.unwrap();
        assert_eq!(sessions.running(&turn), None);
        assert!(sessions.locks.lock().unwrap().is_empty());
    }
}

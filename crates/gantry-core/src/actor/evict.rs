//! Leaving memory when idle: what may be evicted, and how, without losing
//! a command or an event.

use super::*;

impl ThreadActor {
    /// Nothing lives only in this actor's memory: no turn, no pending
    /// approval or task, no "approve for session" grant, no loaded skill.
    pub(super) fn evictable(&self) -> bool {
        self.turn.is_none()
            && self.pending.is_empty()
            && self.grants.lock().is_ok_and(|g| g.is_empty())
            && crate::turn::read_skills(&self.skills).loaded().is_empty()
            && !crate::turn::read_skills(&self.skills)
                .available()
                .iter()
                .any(|s| s.source == SkillSource::Inline)
    }

    /// Leaves memory once everything this actor wrote is stored; the next
    /// use of the thread loads it again from the log. Commands that were
    /// already on their way go to that next actor. False if the store
    /// could not confirm (the actor stays).
    pub(super) async fn evict(
        &mut self,
        mailbox: &mut mpsc::Receiver<Command>,
        cell: &Arc<Cell>,
    ) -> bool {
        if self.shared.writer.flush().await.is_err() {
            return false;
        }
        let id = self.view.thread.id.clone();
        let mut slot = cell.slot.lock().await;
        // Nobody can hand out this actor any more; senders holding it get
        // their command back and load the next one.
        mailbox.close();
        let mut waiting = Vec::new();
        while let Ok(cmd) = mailbox.try_recv() {
            waiting.push(cmd);
        }
        *slot = None;
        // Before the cell goes: the thread's next actor, which loads under a
        // new cell, must find its bus channel already reset.
        self.shared.bus.evict(&id);
        self.shared.cells.forget(&id, cell);
        drop(slot);
        if !waiting.is_empty() {
            tokio::spawn(forward(self.shared.clone(), id, waiting));
        }
        true
    }
}

/// Hands commands an evicted actor never handled to the thread's next
/// actor. A named boxed future: the actor's task would otherwise contain
/// itself (load, spawn, run, evict, load).
pub(super) fn forward(
    shared: Arc<Shared>,
    id: ThreadId,
    waiting: Vec<Command>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(async move {
        let engine = crate::Engine { shared };
        for cmd in waiting {
            if let Ok(next) = engine.actor(&id).await {
                let _ = next.send(cmd).await;
            }
        }
    })
}

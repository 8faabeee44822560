//! Deleting the thread: refused while a turn runs; otherwise everything it
//! wrote is stored, then deleted from the store while nobody can load the
//! thread again (its cell's slot is held), and the actor ends.

use super::*;

impl ThreadActor {
    /// Deletes the thread and answers `reply`; true if it is gone (the
    /// actor then ends). A running turn is not interrupted for it: the
    /// caller is told the thread is busy, and interrupts first if it means to.
    pub(super) async fn delete(
        &mut self,
        mailbox: &mut mpsc::Receiver<Command>,
        cell: &Arc<Cell>,
        reply: oneshot::Sender<Result<(), EngineError>>,
    ) -> bool {
        if let Some(turn) = &self.turn {
            let _ = reply.send(Err(EngineError::Busy {
                thread: self.thread_id().clone(),
                turn: turn.id.clone(),
            }));
            return false;
        }
        // The store must hold every event first, or a late commit would
        // bring part of the thread back.
        if let Err(e) = self.shared.writer.flush().await {
            let _ = reply.send(Err(e.into()));
            return false;
        }
        let id = self.thread_id().clone();
        let mut slot = cell.slot.lock().await;
        if let Err(e) = self.shared.store.delete_thread(&id).await {
            drop(slot);
            let _ = reply.send(Err(e.into()));
            return false;
        }
        mailbox.close();
        let mut waiting = Vec::new();
        while let Ok(cmd) = mailbox.try_recv() {
            waiting.push(cmd);
        }
        *slot = None;
        // Its subscribers' feeds end, and the all-threads tail forgets it.
        self.shared.bus.forget(&id);
        self.shared.cells.forget(&id, cell);
        drop(slot);
        if !waiting.is_empty() {
            // They find no thread now (their callers hear it was not found
            // or went away, as for any command racing the delete).
            tokio::spawn(super::evict::forward(self.shared.clone(), id, waiting));
        }
        let _ = reply.send(Ok(()));
        true
    }
}

//! Thread cells: where each live thread's actor is found, loaded or
//! evicted. Each thread has a cell of its own with its own lock, so loading
//! one thread (store reads, skills discovery, crash recovery) never waits
//! for another; the map of cells is only locked for a lookup, never across
//! I/O.
//!
//! Lock order: a cell's slot, then the map (the map lock is a plain mutex
//! held for a lookup only, never across an await).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use gantry_types::ThreadId;
use tokio::sync::Mutex as AsyncMutex;

use crate::actor::ActorHandle;

/// One thread's place: its actor, while it is live.
#[derive(Default)]
pub(crate) struct Cell {
    /// Held while the actor is loaded, handed out or evicted.
    pub(crate) slot: AsyncMutex<Option<ActorHandle>>,
}

/// Every thread's cell.
#[derive(Default)]
pub(crate) struct Cells {
    map: Mutex<HashMap<ThreadId, Arc<Cell>>>,
}

impl Cells {
    fn map(&self) -> MutexGuard<'_, HashMap<ThreadId, Arc<Cell>>> {
        // Every mutation is one insert or remove: a poisoned map is whole.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cell of `id`, made if there is none.
    pub(crate) fn cell(&self, id: &ThreadId) -> Arc<Cell> {
        self.map().entry(id.clone()).or_default().clone()
    }

    /// Whether `cell` is still the cell of `id` (not forgotten since it was
    /// looked up). Call with the cell's slot held.
    pub(crate) fn is_current(&self, id: &ThreadId, cell: &Arc<Cell>) -> bool {
        self.map().get(id).is_some_and(|c| Arc::ptr_eq(c, cell))
    }

    /// Drops the cell of `id` if it is `cell`. Call with the cell's slot held
    /// and empty, so nobody can load into a forgotten cell.
    pub(crate) fn forget(&self, id: &ThreadId, cell: &Arc<Cell>) {
        let mut map = self.map();
        if map.get(id).is_some_and(|c| Arc::ptr_eq(c, cell)) {
            map.remove(id);
        }
    }

    /// Ids of the threads with a cell (live, loading or just evicted).
    pub(crate) fn ids(&self) -> Vec<ThreadId> {
        self.map().keys().cloned().collect()
    }

    /// How many threads have a cell.
    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }
}

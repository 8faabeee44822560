//! The store's upkeep through the engine: compacting it, so a host or
//! adapter can offer it (Pando's `db.compact`) without reaching the store
//! or its file.

use gantry_store::{CompactRequest, Compaction};

use super::*;

/// The store's upkeep. Get one from [`Engine::storage`].
#[derive(Clone, Copy)]
pub struct Storage<'e> {
    pub(crate) engine: &'e Engine,
}

impl Storage<'_> {
    /// Gives back the space deleted threads and rows left in the store, as
    /// far as its database can ([`gantry_store::CompactMode`] says what was
    /// done), after every event accepted so far is stored. Commits wait
    /// while it runs; a full SQLite compaction rewrites the whole file.
    pub async fn compact(self, request: CompactRequest) -> Result<Compaction, EngineError> {
        self.engine.flush().await?;
        Ok(self.engine.shared.store.compact(request).await?)
    }
}

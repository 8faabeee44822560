//! The conformance suite against [`MemoryStore`].

use gantry_store::MemoryStore;

async fn fixture() -> Option<(MemoryStore, ())> {
    Some((MemoryStore::new(), ()))
}

conformance_tests!(fixture);

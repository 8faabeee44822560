//! The conformance suite against [`MemoryStore`].

use gantry_store::MemoryStore;

async fn fixture() -> (MemoryStore, ()) {
    (MemoryStore::new(), ())
}

conformance_tests!(fixture);

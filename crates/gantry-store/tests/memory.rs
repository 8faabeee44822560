//! The conformance suite against [`MemoryStore`].

mod conformance;

use gantry_store::MemoryStore;

async fn fixture() -> (MemoryStore, ()) {
    (MemoryStore::new(), ())
}

conformance_tests!(fixture);

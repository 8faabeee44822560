//! The tools a request offers, with their wire JSON kept beside them: a turn
//! offers the same tools every round, so their schemas are serialised once
//! per API, not once per request.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use gantry_types::ToolSpec;

use crate::wire::{Wire, WireCache};

/// The tools a request offers. Immutable and cheap to clone: other tools are
/// another `Tools`, so the cached JSON can never go stale.
#[derive(Clone, Default)]
pub struct Tools {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    specs: Vec<ToolSpec>,
    wire: WireCache,
}

impl Tools {
    /// The tools' JSON for `wire` (an array), made by `render` the first time.
    pub(crate) fn rendered(&self, wire: Wire, render: fn(&[ToolSpec]) -> String) -> &str {
        self.inner.wire.get(wire, || render(&self.inner.specs))
    }
}

impl Deref for Tools {
    type Target = [ToolSpec];

    fn deref(&self) -> &[ToolSpec] {
        &self.inner.specs
    }
}

impl From<Vec<ToolSpec>> for Tools {
    fn from(specs: Vec<ToolSpec>) -> Self {
        Self {
            inner: Arc::new(Inner {
                specs,
                wire: WireCache::default(),
            }),
        }
    }
}

impl PartialEq for Tools {
    fn eq(&self, other: &Self) -> bool {
        self.inner.specs == other.inner.specs
    }
}

impl fmt::Debug for Tools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

//! Globally unique, time-ordered identifiers (UUIDv7 strings).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A new UUIDv7 as a lowercase hyphenated string: unique and sortable by creation time.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// A fresh UUIDv7 id.
            pub fn new() -> Self {
                Self(new_id())
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }
    };
}

id_type!(
    /// Identifies a thread (a "session" in some protocols).
    ThreadId
);
id_type!(
    /// Identifies a turn within a thread.
    TurnId
);
id_type!(
    /// Identifies an item within a turn.
    ItemId
);
id_type!(
    /// Identifies an agent (a named configuration threads can run under).
    /// Control planes choose their own; any non-empty string is accepted.
    AgentId
);
id_type!(
    /// Identifies a memory item (the agent's memory; see [`crate::memory`]).
    MemoryId
);

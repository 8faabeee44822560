//! Memory items the agent stores and recalls (seed 001 `MemoryItem`).
//!
//! Each item has a [`MemoryType`]; the types fall into three classes that
//! statistics count and clearing selects ([`MemoryClass`]):
//!
//! | class | types | what it holds |
//! |---|---|---|
//! | long-term | semantic, procedural | facts and how-tos worth keeping |
//! | short-term | episodic | what happened (events of a session) |
//! | working | working | scratch state of the task at hand |
//!
//! Items live in a [`MemoryScope`]: a thread's own memory, or the memory an
//! agent shares with every thread that runs under it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::ids::MemoryId;
use crate::{AgentId, ThreadId};

/// What kind of memory an item is (seed 001 `MemoryType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryType {
    /// Something that happened: an event, an outcome, a conversation.
    Episodic,
    /// A fact: about the user, the project, the world.
    Semantic,
    /// How to do something: a procedure, a command that works.
    Procedural,
    /// Scratch state of the current task.
    Working,
}

impl MemoryType {
    /// Every type.
    pub const ALL: [MemoryType; 4] = [
        MemoryType::Episodic,
        MemoryType::Semantic,
        MemoryType::Procedural,
        MemoryType::Working,
    ];

    /// The class it counts in.
    pub fn class(self) -> MemoryClass {
        match self {
            MemoryType::Semantic | MemoryType::Procedural => MemoryClass::LongTerm,
            MemoryType::Episodic => MemoryClass::ShortTerm,
            MemoryType::Working => MemoryClass::Working,
        }
    }

    /// Its name (`episodic`, `semantic`, `procedural`, `working`).
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::Episodic => "episodic",
            MemoryType::Semantic => "semantic",
            MemoryType::Procedural => "procedural",
            MemoryType::Working => "working",
        }
    }

    /// The type named `name` (as [`MemoryType::as_str`] spells it).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// The classes statistics count and clearing selects (seed 001
/// `MemoryStats`, `ClearMemoriesRequest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryClass {
    /// Semantic and procedural memories.
    LongTerm,
    /// Episodic memories.
    ShortTerm,
    /// Working memories.
    Working,
}

impl MemoryClass {
    /// The types in this class.
    pub fn types(self) -> &'static [MemoryType] {
        match self {
            MemoryClass::LongTerm => &[MemoryType::Semantic, MemoryType::Procedural],
            MemoryClass::ShortTerm => &[MemoryType::Episodic],
            MemoryClass::Working => &[MemoryType::Working],
        }
    }
}

/// Whose memory an item is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum MemoryScope {
    /// One thread's own memory.
    Thread(ThreadId),
    /// Shared by every thread of an agent.
    Agent(AgentId),
}

impl MemoryScope {
    /// A single string for the scope (`thread:<id>`, `agent:<id>`), e.g. a
    /// table column.
    pub fn key(&self) -> String {
        match self {
            MemoryScope::Thread(id) => format!("thread:{id}"),
            MemoryScope::Agent(id) => format!("agent:{id}"),
        }
    }

    /// The scope a [`MemoryScope::key`] names.
    pub fn from_key(key: &str) -> Option<Self> {
        match key.split_once(':')? {
            ("thread", id) if !id.is_empty() => Some(MemoryScope::Thread(ThreadId::from(id))),
            ("agent", id) if !id.is_empty() => Some(MemoryScope::Agent(AgentId::from(id))),
            _ => None,
        }
    }
}

/// One stored memory (seed 001 `MemoryItem`, plus its scope).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryItem {
    /// Its id.
    pub id: MemoryId,
    /// What is remembered.
    pub content: String,
    /// When it was stored (or the time the client gave), unix milliseconds.
    pub timestamp: i64,
    /// How much it matters, 0 to 1.
    pub importance: f32,
    /// Tags, lowercase, each once.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Its type.
    pub memory_type: MemoryType,
    /// Free-form key/value data.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// How often it was retrieved by id.
    #[serde(default)]
    pub access_count: u32,
    /// When it was last retrieved by id, unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_accessed: Option<i64>,
    /// Whose memory it is.
    pub scope: MemoryScope,
}

/// A memory to store (seed 001 `StoreMemoryRequest.memory`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewMemory {
    /// Its id: a fresh UUIDv7 when `None`. An existing id of the same
    /// scope replaces that memory (its access count stays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<MemoryId>,
    /// What to remember; must not be blank.
    pub content: String,
    /// When it happened, unix milliseconds; now when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    /// How much it matters, 0 to 1.
    pub importance: f32,
    /// Tags; trimmed, lowercased and deduplicated when stored.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Its type.
    pub memory_type: MemoryType,
    /// Free-form key/value data.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// Store it in the agent's shared memory rather than the thread's own
    /// (only for threads that run under an agent).
    #[serde(default)]
    pub shared: bool,
}

impl Default for NewMemory {
    /// An empty semantic memory of importance 0.5, in the thread's own scope.
    fn default() -> Self {
        Self {
            id: None,
            content: String::new(),
            timestamp: None,
            importance: 0.5,
            tags: Vec::new(),
            memory_type: MemoryType::Semantic,
            metadata: BTreeMap::new(),
            shared: false,
        }
    }
}

/// What to search for (seed 001 `SearchMemoriesRequest`). Every filter
/// narrows the result; with no query text, results are ordered by
/// importance, then newest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryQuery {
    /// Free text, ranked by full-text relevance (BM25); a memory matches
    /// if it contains any of its words (common words such as "the" aside),
    /// in its content or tags. Words match whole and case-insensitively,
    /// without stemming ("deploy" does not find "deployed").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Only memories carrying every one of these tags (case-insensitive).
    #[serde(default)]
    pub tags: Vec<String>,
    /// At most this many results (0 means the default of 10; at most 100).
    #[serde(default)]
    pub limit: u32,
    /// Only memories stored in the last 24 hours (by their timestamp).
    #[serde(default)]
    pub recent_only: bool,
    /// Only memories at least this important.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_importance: Option<f32>,
}

/// Which memories to summarize (newer A3S `SummarizeMemories`): those a
/// thread sees, narrowed like a search without text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySummaryRequest {
    /// Only memories carrying every one of these tags (case-insensitive).
    #[serde(default)]
    pub tags: Vec<String>,
    /// At most this many memories, the most important and newest first (0
    /// means 50; at most 100).
    #[serde(default)]
    pub limit: u32,
    /// Only memories stored in the last this many hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recent_hours: Option<u32>,
}

/// A summary the model wrote of some memories, kept as a memory itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemorySummary {
    /// The summary's text.
    pub summary: String,
    /// How many memories it summarizes.
    pub memory_count: u32,
    /// The summary as stored in the thread's memory (semantic, tagged
    /// `summary`); `None` when there was nothing to summarize.
    pub stored: Option<MemoryItem>,
}

/// The result of a search (seed 001 `SearchMemoriesResponse`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySearchResult {
    /// The best matches, best first, at most the query's limit.
    pub memories: Vec<MemoryItem>,
    /// How many memories matched before the limit.
    pub total_count: u64,
}

/// How many memories there are, by class (seed 001 `MemoryStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryStats {
    /// Semantic and procedural memories.
    pub long_term_count: u64,
    /// Episodic memories.
    pub short_term_count: u64,
    /// Working memories.
    pub working_count: u64,
}

impl MemoryStats {
    /// Counts `n` memories of type `memory_type`.
    pub fn add(&mut self, memory_type: MemoryType, n: u64) {
        let count = match memory_type.class() {
            MemoryClass::LongTerm => &mut self.long_term_count,
            MemoryClass::ShortTerm => &mut self.short_term_count,
            MemoryClass::Working => &mut self.working_count,
        };
        *count += n;
    }

    /// Every memory counted.
    pub fn total(&self) -> u64 {
        self.long_term_count + self.short_term_count + self.working_count
    }
}

/// Which memories to clear (seed 001 `ClearMemoriesRequest`). Nothing
/// selected clears nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryClear {
    /// Semantic and procedural memories.
    #[serde(default)]
    pub long_term: bool,
    /// Episodic memories.
    #[serde(default)]
    pub short_term: bool,
    /// Working memories.
    #[serde(default)]
    pub working: bool,
    /// Also clear the agent's shared memories of those classes (they are
    /// gone for every thread of the agent); otherwise only the thread's own.
    #[serde(default)]
    pub include_shared: bool,
}

impl MemoryClear {
    /// Every class, the thread's own memories only.
    pub fn all() -> Self {
        Self {
            long_term: true,
            short_term: true,
            working: true,
            include_shared: false,
        }
    }

    /// The classes selected.
    pub fn classes(&self) -> Vec<MemoryClass> {
        [
            (self.long_term, MemoryClass::LongTerm),
            (self.short_term, MemoryClass::ShortTerm),
            (self.working, MemoryClass::Working),
        ]
        .into_iter()
        .filter_map(|(on, class)| on.then_some(class))
        .collect()
    }

    /// The types selected.
    pub fn types(&self) -> Vec<MemoryType> {
        self.classes()
            .into_iter()
            .flat_map(|c| c.types().iter().copied())
            .collect()
    }
}

/// A memory event for the engine-wide stream (seed 001 `AgentEvent`
/// `MEMORY_STORED`, `MEMORY_RECALLED`, `MEMORIES_SEARCHED`, `MEMORY_CLEARED`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum MemoryEvent {
    /// A memory was stored (or replaced).
    Stored {
        /// The memory as stored.
        memory: MemoryItem,
    },
    /// A memory was retrieved by id (its access counted).
    Recalled {
        /// The memory, access counted.
        memory: MemoryItem,
    },
    /// Memories were searched.
    Searched {
        /// The search.
        query: MemoryQuery,
        /// Ids of the memories returned, best first.
        memory_ids: Vec<MemoryId>,
        /// How many matched before the limit.
        total_count: u64,
    },
    /// One memory was deleted by its id.
    Deleted {
        /// Its id.
        memory_id: MemoryId,
    },
    /// Memories were cleared.
    Cleared {
        /// What was cleared.
        clear: MemoryClear,
        /// How many memories were deleted.
        cleared_count: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_is_in_exactly_its_class() {
        for t in MemoryType::ALL {
            assert!(t.class().types().contains(&t), "{t:?}");
            assert_eq!(MemoryType::parse(t.as_str()), Some(t));
        }
        let all = MemoryClear::all().types();
        assert_eq!(all.len(), MemoryType::ALL.len());
    }

    #[test]
    fn scope_keys_round_trip() {
        for scope in [
            MemoryScope::Thread(ThreadId::from("t-1")),
            MemoryScope::Agent(AgentId::from("bot")),
        ] {
            assert_eq!(MemoryScope::from_key(&scope.key()), Some(scope));
        }
        assert_eq!(MemoryScope::from_key("thread:"), None);
        assert_eq!(MemoryScope::from_key("user:x"), None);
    }
}

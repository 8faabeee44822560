//! Compacting a store: giving back the space deleted rows left behind
//! ([`Store::compact`](crate::Store::compact)). Each backend does what its
//! database offers and says which it did ([`CompactMode`]); sizes are the
//! database's own count of its bytes, before and after.

/// What [`Store::compact`](crate::Store::compact) is asked to do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactRequest {
    /// Only hand back pages already free, without rewriting the database
    /// (SQLite's `PRAGMA incremental_vacuum`, which frees something only
    /// once the file is in incremental auto-vacuum mode).
    pub incremental: bool,
    /// Before a full compaction, switch SQLite's file to incremental
    /// auto-vacuum, so later compactions can be incremental. Ignored with
    /// `incremental`, and by stores that have no such mode.
    pub enable_auto_vacuum: bool,
}

/// What a store did to compact itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactMode {
    /// SQLite: the whole file rewritten (`VACUUM`).
    Full,
    /// SQLite: free pages handed back (`PRAGMA incremental_vacuum`).
    Incremental,
    /// PostgreSQL: `VACUUM (ANALYZE)` of the database, which makes dead
    /// rows' space reusable; the server gives files back to the system
    /// only in the rare case their tail is empty.
    PostgresVacuum,
    /// In memory: nothing is on disk and nothing was done.
    Memory,
}

impl CompactMode {
    /// The mode's name on the wire: `full`, `incremental` (as Pando's own
    /// store says them), `postgres-vacuum`, `memory`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Incremental => "incremental",
            Self::PostgresVacuum => "postgres-vacuum",
            Self::Memory => "memory",
        }
    }
}

/// The outcome of a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    /// What was done.
    pub mode: CompactMode,
    /// The database's size before, in bytes (SQLite: `page_count *
    /// page_size`; PostgreSQL: `pg_database_size`; in memory: 0).
    pub size_before: u64,
    /// Its size after, measured the same way.
    pub size_after: u64,
}

impl Compaction {
    /// Bytes given back: `size_before - size_after`, negative when the
    /// database grew meanwhile (other writers, or PostgreSQL's statistics).
    pub fn freed(&self) -> i64 {
        let before = i64::try_from(self.size_before).unwrap_or(i64::MAX);
        let after = i64::try_from(self.size_after).unwrap_or(i64::MAX);
        before.saturating_sub(after)
    }
}

/// A size as the database counted it (never negative).
pub(crate) fn bytes(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

//! Every thread's update log in commit order, for the all-threads feed:
//! where an entry stands in it ([`LogCursor`]) and a page read after one.
//!
//! On SQLite an entry's place is its row id, given in commit order (one
//! writer at a time). On PostgreSQL replicas commit at once, and a
//! sequence is drawn before commit, so a later commit may carry a smaller
//! number: there the place is (writing transaction, position), and a
//! reader takes only entries of transactions older than every one still
//! running, which no later commit can precede (`postgres.rs`).

use std::fmt;

use super::ThreadUpdateRecord;

/// Where an entry stands in the log of every thread: entries are read in
/// this order, and a client resumes after the last it has. Shown as
/// `POSITION` (SQLite, and PostgreSQL rows from before it had this) or
/// `TX.POSITION` (PostgreSQL).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogCursor {
    /// The transaction that wrote the entry (PostgreSQL), else 0.
    pub tx: i64,
    /// The entry's position.
    pub position: i64,
}

impl LogCursor {
    /// Parses what [`fmt::Display`] writes; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let number = |part: &str| {
            (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse::<i64>().ok())
                .flatten()
        };
        match text.split_once('.') {
            None => Some(Self {
                tx: 0,
                position: number(text)?,
            }),
            Some((tx, position)) => Some(Self {
                tx: number(tx)?,
                position: number(position)?,
            }),
        }
    }
}

impl fmt::Display for LogCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.tx == 0 {
            write!(f, "{}", self.position)
        } else {
            write!(f, "{}.{}", self.tx, self.position)
        }
    }
}

/// An entry of a thread's log and its place in every thread's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedUpdate {
    /// Its place in every thread's log.
    pub cursor: LogCursor,
    /// The entry.
    pub update: ThreadUpdateRecord,
}

/// A page of every thread's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogPage {
    /// Entries after the cursor asked for, in order.
    pub updates: Vec<LoggedUpdate>,
    /// Whether committed entries wait behind a transaction still running
    /// (PostgreSQL): they become readable when it ends, which may announce
    /// nothing, so the reader asks again a little later.
    pub held_back: bool,
}

/// A row of the log as both stores read it.
pub(super) type LogRow = (i64, i64, String, i64, i64, String, String);

/// The entry of a row: (tx, position, thread, seq, ts, kind, data).
pub(super) fn logged((tx, position, thread_id, seq, ts, kind, data): LogRow) -> LoggedUpdate {
    LoggedUpdate {
        cursor: LogCursor { tx, position },
        update: ThreadUpdateRecord {
            thread_id,
            seq,
            ts,
            kind,
            data,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_what_it_writes_and_nothing_else() {
        for cursor in [
            LogCursor { tx: 0, position: 0 },
            LogCursor {
                tx: 0,
                position: 42,
            },
            LogCursor { tx: 7, position: 3 },
        ] {
            assert_eq!(LogCursor::parse(&cursor.to_string()), Some(cursor));
        }
        for bad in [
            "",
            ".",
            "1.",
            ".1",
            "-1",
            "1.-2",
            "1.2.3",
            "x",
            " 1",
            "+1",
            "99999999999999999999",
        ] {
            assert_eq!(LogCursor::parse(bad), None, "{bad:?}");
        }
        let old = LogCursor { tx: 0, position: 9 };
        let new = LogCursor { tx: 1, position: 1 };
        assert!(old < new, "rows from before the transaction ids come first");
    }
}

//! A transaction's writes grouped by table, so the store writes each table
//! with one multi-row statement instead of one statement per write: a
//! group commit of many runners' updates then costs a handful of
//! statements, not a dozen per message.
//!
//! A row written twice in one group is merged into the row the two
//! statements would have left, which one statement must do (PostgreSQL
//! refuses to upsert a row twice in one statement). Tables are written in
//! the order their foreign keys need.

use std::collections::HashMap;
use std::hash::Hash;

use super::records::{
    AgentRecord, ItemRecord, RequestRecord, SkillRecord, ThreadRecord, ThreadUpdateRecord,
    TurnRecord, Upsert, Write,
};

/// The rows of a batch, table by table, each row once.
#[derive(Debug, Default)]
pub(super) struct Grouped {
    pub agents: Vec<AgentRecord>,
    pub skills: Vec<SkillRecord>,
    pub threads: Vec<ThreadRecord>,
    pub requests: Vec<RequestRecord>,
    pub turns: Vec<TurnRecord>,
    pub items: Vec<ItemRecord>,
    /// The log entries, in the batch's order: also what the write returns.
    pub updates: Vec<ThreadUpdateRecord>,
}

impl Grouped {
    /// Groups `batch`, merging the rows it writes more than once.
    pub(super) fn of(batch: &[Write]) -> Self {
        let mut agents = Table::default();
        let mut skills = Table::default();
        let mut threads = Table::default();
        let mut requests = Table::default();
        let mut turns = Table::default();
        let mut items = Table::default();
        let mut updates = Vec::new();
        for write in batch {
            match write {
                Write::Agent(a) => agents.put(a.id.clone(), a.clone(), |kept, new| {
                    *kept = AgentRecord {
                        created_at: kept.created_at,
                        ..new
                    };
                }),
                Write::Skill(s) => skills.put(
                    (s.agent_id.clone(), s.package_name.clone()),
                    s.clone(),
                    |kept, new| *kept = new,
                ),
                Write::Request(r) => requests.put(r.id.clone(), r.clone(), |kept, new| {
                    // What a request learns is only ever added.
                    kept.thread_id = kept.thread_id.take().or(new.thread_id);
                    kept.turn_id = kept.turn_id.take().or(new.turn_id);
                }),
                Write::Change { seq, change } => {
                    let seq = *seq;
                    match &change.upsert {
                        Upsert::Thread(t) => threads.put(t.id.clone(), t.clone(), |kept, new| {
                            *kept = ThreadRecord {
                                created_at: kept.created_at,
                                ..new
                            };
                        }),
                        Upsert::Turn(t) => turns.put(
                            (t.thread_id.clone(), t.id.clone()),
                            TurnRecord {
                                first_seq: seq,
                                ..t.clone()
                            },
                            |kept, new| {
                                kept.status = new.status;
                                kept.updated_at = new.updated_at;
                            },
                        ),
                        Upsert::Item(i) => items.put(
                            (i.thread_id.clone(), i.id.clone()),
                            ItemRecord {
                                first_seq: seq,
                                ..i.clone()
                            },
                            |kept, new| {
                                *kept = ItemRecord {
                                    first_seq: kept.first_seq,
                                    created_at: kept.created_at,
                                    ..new
                                };
                            },
                        ),
                        Upsert::Nothing => {}
                    }
                    updates.push(ThreadUpdateRecord {
                        thread_id: change.thread_id.clone(),
                        seq,
                        ts: change.ts,
                        kind: change.kind.clone(),
                        data: change.data.clone(),
                    });
                }
            }
        }
        Self {
            agents: agents.rows,
            skills: skills.rows,
            threads: threads.rows,
            requests: requests.rows,
            turns: turns.rows,
            items: items.rows,
            updates,
        }
    }
}

/// Rows of one table in the order first written, each key once.
struct Table<K, V> {
    rows: Vec<V>,
    at: HashMap<K, usize>,
}

impl<K, V> Default for Table<K, V> {
    fn default() -> Self {
        Self {
            rows: Vec::new(),
            at: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash, V> Table<K, V> {
    /// Adds `row`, or merges it into the row of its key already here.
    fn put(&mut self, key: K, row: V, merge: impl FnOnce(&mut V, V)) {
        match self.at.get(&key) {
            Some(&index) => merge(&mut self.rows[index], row),
            None => {
                self.at.insert(key, self.rows.len());
                self.rows.push(row);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ThreadChange;

    fn turn(status: &str, at: i64) -> TurnRecord {
        TurnRecord {
            thread_id: "t".into(),
            id: "turn".into(),
            request_id: format!("r-{status}"),
            status: status.into(),
            first_seq: 0,
            created_at: at,
            updated_at: at,
        }
    }

    fn change(seq: i64, upsert: Upsert) -> Write {
        Write::Change {
            seq,
            change: ThreadChange {
                thread_id: "t".into(),
                ts: seq,
                upsert,
                kind: "turn".into(),
                data: format!("{{\"seq\":{seq}}}"),
            },
        }
    }

    fn request(thread_id: Option<&str>, turn_id: Option<&str>) -> RequestRecord {
        RequestRecord {
            id: "r".into(),
            runner_id: "runner".into(),
            kind: "create_user_message".into(),
            agent_id: None,
            thread_id: thread_id.map(str::to_owned),
            turn_id: turn_id.map(str::to_owned),
            params: "{}".into(),
            created_at: 1,
        }
    }

    #[test]
    fn a_turn_written_twice_is_one_row_as_the_two_upserts_leave_it() {
        let batch = [
            change(4, Upsert::Turn(turn("running", 10))),
            change(5, Upsert::Nothing),
            change(6, Upsert::Turn(turn("completed", 20))),
        ];
        let grouped = Grouped::of(&batch);
        assert_eq!(grouped.turns.len(), 1);
        let row = &grouped.turns[0];
        // The first write's seq, request and creation; the last's state.
        assert_eq!(
            (row.first_seq, row.request_id.as_str(), row.created_at),
            (4, "r-running", 10)
        );
        assert_eq!((row.status.as_str(), row.updated_at), ("completed", 20));
        // Every log entry stays, in order.
        let seqs: Vec<i64> = grouped.updates.iter().map(|u| u.seq).collect();
        assert_eq!(seqs, [4, 5, 6]);
    }

    #[test]
    fn a_request_only_gains_what_it_did_not_know() {
        let batch = [
            Write::Request(request(None, None)),
            Write::Request(request(Some("thread"), None)),
            Write::Request(request(Some("other"), Some("turn"))),
        ];
        let grouped = Grouped::of(&batch);
        assert_eq!(grouped.requests.len(), 1);
        let row = &grouped.requests[0];
        assert_eq!(
            (row.thread_id.as_deref(), row.turn_id.as_deref()),
            (Some("thread"), Some("turn"))
        );
    }
}

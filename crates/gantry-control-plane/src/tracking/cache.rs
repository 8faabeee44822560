//! What the control plane keeps in memory of what it wrote itself: the
//! requests it sent, and each thread's record, last seq, latest turn and
//! that turn's items. Reads that hit it skip the store; everything in it is
//! committed (or, for a request, on its way to the store ahead of any
//! reply to it). Bounded: the oldest entries make way, and are read from
//! the store again when needed.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard};

use crate::store::{ItemRecord, RequestRecord, ThreadRecord, TurnRecord};

/// Requests kept (a few minutes of traffic at full rate).
const REQUESTS: usize = 200_000;

/// Threads kept.
const THREADS: usize = 50_000;

/// One thread as last written.
#[derive(Debug, Clone, Default)]
pub(crate) struct ThreadState {
    /// The thread (`None`: not in the store, e.g. a log entry of a thread
    /// another runner's request named).
    pub record: Option<ThreadRecord>,
    /// The last seq of its log.
    pub last_seq: i64,
    /// The latest turn written.
    pub turn: Option<TurnRecord>,
    /// Items of `turn` written.
    pub items: HashMap<String, ItemRecord>,
    /// Whether `items` are all of `turn`'s: it was first recorded here, so
    /// an item of it not in `items` is new.
    pub turn_born_here: bool,
    /// The ids of its turns, so a new turn needs no read to tell it is new.
    pub turn_ids: TurnIds,
}

/// What is known of a thread's turn ids.
#[derive(Debug, Clone, Default)]
pub(crate) enum TurnIds {
    /// Not read yet.
    #[default]
    Unknown,
    /// Every turn of the thread: an id not among them is a new turn.
    All(HashSet<String>),
    /// More than are kept: the store answers.
    TooMany,
}

impl TurnIds {
    /// Ids kept per thread at most (a cached thread stays small).
    pub(crate) const MAX: usize = 64;

    /// From the store's list of (up to `MAX + 1`) ids.
    pub(crate) fn read(ids: Vec<String>) -> Self {
        if ids.len() > Self::MAX {
            Self::TooMany
        } else {
            Self::All(ids.into_iter().collect())
        }
    }

    /// A turn written.
    pub(crate) fn add(&mut self, id: &str) {
        if let Self::All(ids) = self
            && !ids.contains(id)
        {
            if ids.len() >= Self::MAX {
                *self = Self::TooMany;
            } else {
                ids.insert(id.to_owned());
            }
        }
    }

    /// Whether `id` is surely no turn of the thread yet.
    pub(crate) fn is_new(&self, id: &str) -> bool {
        matches!(self, Self::All(ids) if !ids.contains(id))
    }
}

/// The cache; every method takes its lock briefly.
pub(crate) struct Cache {
    inner: Mutex<Inner>,
}

struct Inner {
    requests: Bounded<RequestRecord>,
    threads: Bounded<ThreadState>,
}

impl Default for Cache {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner {
                requests: Bounded::new(REQUESTS),
                threads: Bounded::new(THREADS),
            }),
        }
    }
}

impl Cache {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every change under the lock is one map operation: still whole.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The request `id`, if kept.
    pub(crate) fn request(&self, id: &str) -> Option<RequestRecord> {
        self.lock().requests.get(id).cloned()
    }

    /// Keeps a request.
    pub(crate) fn put_request(&self, request: RequestRecord) {
        self.lock().requests.insert(request.id.clone(), request);
    }

    /// The thread `id`'s state, if kept.
    pub(crate) fn thread(&self, id: &str) -> Option<ThreadState> {
        self.lock().threads.get(id).cloned()
    }

    /// The thread record `id`, if kept.
    pub(crate) fn thread_record(&self, id: &str) -> Option<ThreadRecord> {
        self.lock().threads.get(id)?.record.clone()
    }

    /// The turn `turn_id` of a thread, if it is the thread's latest kept.
    pub(crate) fn turn(&self, thread_id: &str, turn_id: &str) -> Option<TurnRecord> {
        let inner = self.lock();
        let turn = inner.threads.get(thread_id)?.turn.as_ref()?;
        (turn.id == turn_id).then(|| turn.clone())
    }

    /// Keeps what a committed batch wrote.
    pub(crate) fn committed(
        &self,
        threads: impl IntoIterator<Item = (String, ThreadState)>,
        requests: impl IntoIterator<Item = (String, RequestRecord)>,
    ) {
        let mut inner = self.lock();
        for (id, state) in threads {
            inner.threads.insert(id, state);
        }
        for (id, request) in requests {
            inner.requests.insert(id, request);
        }
    }

    /// Drops a thread: another replica wrote it.
    pub(crate) fn forget_thread(&self, thread_id: &str) {
        self.lock().threads.remove(thread_id);
    }

    /// Drops every thread of `runner_id`: its channel is (re)opened here,
    /// and another replica may have written them meanwhile.
    pub(crate) fn forget_runner(&self, runner_id: &str) {
        self.lock().threads.retain(|state| {
            state
                .record
                .as_ref()
                .is_none_or(|r| r.runner_id != runner_id)
        });
    }
}

/// A map of at most `capacity` entries; the oldest inserted go first.
struct Bounded<V> {
    capacity: usize,
    map: HashMap<String, (u64, V)>,
    /// Keys by first insertion, with the generation they were inserted in
    /// (an entry removed and inserted again is a new generation).
    order: VecDeque<(u64, String)>,
    generation: u64,
}

impl<V> Bounded<V> {
    fn new(capacity: usize) -> Self {
        Self {
            capacity,
            map: HashMap::new(),
            order: VecDeque::new(),
            generation: 0,
        }
    }

    fn get(&self, key: &str) -> Option<&V> {
        self.map.get(key).map(|(_, v)| v)
    }

    fn insert(&mut self, key: String, value: V) {
        if let Some(entry) = self.map.get_mut(&key) {
            entry.1 = value;
            return;
        }
        self.generation += 1;
        self.order.push_back((self.generation, key.clone()));
        self.map.insert(key, (self.generation, value));
        while self.map.len() > self.capacity {
            let Some((generation, key)) = self.order.pop_front() else {
                break;
            };
            if self.map.get(&key).is_some_and(|(g, _)| *g == generation) {
                self.map.remove(&key);
            }
        }
    }

    fn remove(&mut self, key: &str) {
        if self.map.remove(key).is_none() {
            return;
        }
        // Its place in `order` is skipped when reached; compacted now and
        // then so removals without evictions do not pile up.
        if self.order.len() > 2 * self.map.len() + 1024 {
            let map = &self.map;
            self.order
                .retain(|(g, k)| map.get(k).is_some_and(|(generation, _)| generation == g));
        }
    }

    fn retain(&mut self, mut keep: impl FnMut(&V) -> bool) {
        self.map.retain(|_, (_, v)| keep(v));
        let map = &self.map;
        self.order
            .retain(|(g, k)| map.get(k).is_some_and(|(generation, _)| generation == g));
    }
}

#[cfg(test)]
mod tests {
    use super::{Bounded, TurnIds};

    #[test]
    fn a_turn_is_new_only_while_every_turn_of_its_thread_is_known() {
        assert!(!TurnIds::Unknown.is_new("t1"), "unknown: the store answers");
        let mut ids = TurnIds::read(vec!["t1".to_owned()]);
        assert!(!ids.is_new("t1"));
        assert!(ids.is_new("t2"));
        ids.add("t2");
        assert!(!ids.is_new("t2"));
        for n in 0..TurnIds::MAX {
            ids.add(&format!("more-{n}"));
        }
        assert!(matches!(ids, TurnIds::TooMany));
        assert!(!ids.is_new("t3"), "too many kept: the store answers");
        let many = (0..=TurnIds::MAX).map(|n| n.to_string()).collect();
        assert!(matches!(TurnIds::read(many), TurnIds::TooMany));
    }

    #[test]
    fn the_oldest_entries_make_way_and_a_reinserted_key_is_new() {
        let mut map = Bounded::new(2);
        map.insert("a".to_owned(), 1);
        map.insert("b".to_owned(), 2);
        map.insert("a".to_owned(), 3);
        assert_eq!(map.get("a"), Some(&3));
        map.insert("c".to_owned(), 4);
        assert_eq!((map.get("a"), map.get("b")), (None, Some(&2)));
        map.retain(|v| *v != 2);
        map.insert("a".to_owned(), 5);
        map.insert("d".to_owned(), 6);
        assert_eq!(
            (map.get("a"), map.get("c"), map.get("d")),
            (Some(&5), None, Some(&6))
        );
    }
}

//! The event bus: live broadcast of events and deltas, with "from seq N"
//! subscriptions that replay what the subscriber missed with no gap and no
//! duplicate.
//!
//! Only stored events are published: the store writer publishes each event
//! after its commit, so no client ever sees an event that a crash could
//! take back. A delta waits until the event it follows is published, so
//! every subscriber sees a thread's events and deltas in the order they
//! happened.
//!
//! Why no gap: a subscription registers its live receiver and snapshots the
//! in-memory tail under the same lock that publishing takes, and everything
//! published is already in the store. Everything older than the tail is
//! therefore read from the store, everything newer reaches the receiver.
//! Why no duplicate: the subscription remembers the last seq it delivered
//! per thread and drops anything at or below it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use gantry_store::Store;
use gantry_types::{Delta, DeltaKind, Event, EventPayload, ItemId, ThreadId, TurnId};
use serde::Serialize;
use tokio::sync::broadcast::{self, error::RecvError};

use crate::EngineError;

/// Published events kept in memory per thread, so subscribers that are only
/// a little behind are served without a store query.
const TAIL_KEEP: usize = 256;
/// Text kept per in-progress item for late joiners.
const PARTIAL_CAP: usize = 1024 * 1024;

/// What a subscriber receives.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Notification {
    /// A durable event.
    Event(Arc<Event>),
    /// Live streaming output. A subscriber that joins while an item is in
    /// progress first gets one delta with the item's text so far.
    Delta(Arc<Delta>),
    /// The subscriber fell behind and missed live notifications; the
    /// subscription ends. Resubscribe with `resume` to continue.
    Lagged {
        /// Where to resume: per thread, the first seq not delivered.
        resume: ResumeFrom,
    },
}

/// A subscription start position.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ResumeFrom {
    /// First seq wanted for threads not listed in `threads`.
    pub from_seq: u64,
    /// First seq wanted, per thread.
    pub threads: BTreeMap<ThreadId, u64>,
}

impl ResumeFrom {
    /// Every thread from `seq`.
    pub fn all_from(seq: u64) -> Self {
        Self {
            from_seq: seq,
            threads: BTreeMap::new(),
        }
    }

    fn start_for(&self, thread: &ThreadId) -> u64 {
        self.threads.get(thread).copied().unwrap_or(self.from_seq)
    }
}

struct Partial {
    turn_id: TurnId,
    kind: fn(String) -> DeltaKind,
    text: String,
}

#[derive(Default)]
struct Channel {
    /// Created by the first subscriber, dropped when nobody listens, so idle
    /// threads cost no ring buffer.
    tx: Option<broadcast::Sender<Notification>>,
    tail: VecDeque<Arc<Event>>,
    /// The last seq published (and so stored).
    published: u64,
    /// Deltas that follow an event not yet published.
    held: VecDeque<Delta>,
    partial: HashMap<ItemId, Partial>,
}

impl Channel {
    fn trim(&mut self) {
        while self.tail.len() > TAIL_KEEP {
            self.tail.pop_front();
        }
    }

    /// Folds a delta into its item's text so far and broadcasts it.
    fn deliver(&mut self, delta: Delta, global: &broadcast::Sender<Notification>) {
        let p = self
            .partial
            .entry(delta.item_id.clone())
            .or_insert_with(|| Partial {
                turn_id: delta.turn_id.clone(),
                kind: match delta.kind {
                    DeltaKind::AgentText(_) => DeltaKind::AgentText,
                    DeltaKind::Reasoning(_) => DeltaKind::Reasoning,
                    DeltaKind::CommandOutput(_) => DeltaKind::CommandOutput,
                    DeltaKind::StructuredOutput(_) => DeltaKind::StructuredOutput,
                },
                text: String::new(),
            });
        if p.text.len() < PARTIAL_CAP {
            p.text.push_str(delta.kind.text());
        }
        let n = Notification::Delta(Arc::new(delta));
        self.send(&n);
        let _ = global.send(n);
    }

    fn send(&mut self, n: &Notification) {
        if let Some(tx) = &self.tx
            && tx.send(n.clone()).is_err()
        {
            self.tx = None;
        }
    }

    fn snapshot(&self, thread: &ThreadId, from: u64, into: &mut Snapshot) {
        into.tail
            .extend(self.tail.iter().filter(|e| e.seq >= from).cloned());
        into.after_seq = self.published;
        for (item_id, p) in &self.partial {
            into.partials.push(Arc::new(Delta {
                thread_id: thread.clone(),
                turn_id: p.turn_id.clone(),
                item_id: item_id.clone(),
                after_seq: into.after_seq,
                kind: (p.kind)(p.text.clone()),
            }));
        }
    }
}

#[derive(Default)]
struct Snapshot {
    tail: Vec<Arc<Event>>,
    after_seq: u64,
    partials: Vec<Arc<Delta>>,
}

struct Inner {
    global: broadcast::Sender<Notification>,
    threads: HashMap<ThreadId, Channel>,
}

/// The in-process event bus.
pub(crate) struct Bus {
    inner: Mutex<Inner>,
    store: Arc<dyn Store>,
    buffer: usize,
}

impl Bus {
    pub(crate) fn new(store: Arc<dyn Store>, buffer: usize) -> Self {
        let buffer = buffer.max(16);
        Self {
            inner: Mutex::new(Inner {
                global: broadcast::channel(buffer).0,
                threads: HashMap::new(),
            }),
            store,
            buffer,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every
        // mutation is a single push/pop), so poisoning is safe to ignore.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes a stored event (called by the store writer after its
    /// commit, in seq order per thread), then the deltas that follow it.
    pub(crate) fn publish_event(&self, event: Arc<Event>) {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let n = Notification::Event(event.clone());
        let _ = inner.global.send(n.clone());
        let ch = inner.threads.entry(event.thread_id.clone()).or_default();
        if let EventPayload::ItemCompleted { item } = &event.payload {
            ch.partial.remove(&item.id);
        }
        ch.published = ch.published.max(event.seq);
        ch.tail.push_back(event);
        ch.trim();
        ch.send(&n);
        while ch.held.front().is_some_and(|d| d.after_seq <= ch.published) {
            if let Some(delta) = ch.held.pop_front() {
                ch.deliver(delta, &inner.global);
            }
        }
    }

    /// Publishes a live delta, once the event it follows is published.
    pub(crate) fn publish_delta(&self, delta: Delta) {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let ch = inner.threads.entry(delta.thread_id.clone()).or_default();
        if delta.after_seq <= ch.published && ch.held.is_empty() {
            ch.deliver(delta, &inner.global);
        } else {
            ch.held.push_back(delta);
        }
    }

    /// Records that a thread loaded from the store holds events up to `seq`
    /// (published by an earlier run, or never: either way stored).
    pub(crate) fn loaded(&self, thread: &ThreadId, seq: u64) {
        let mut inner = self.lock();
        let ch = inner.threads.entry(thread.clone()).or_default();
        ch.published = ch.published.max(seq);
    }

    /// Forgets an evicted thread's channel unless someone still listens or
    /// waits for output: everything it published is in the store.
    pub(crate) fn evict(&self, thread: &ThreadId) {
        let mut inner = self.lock();
        let unused = inner.threads.get(thread).is_some_and(|ch| {
            ch.tx.as_ref().is_none_or(|tx| tx.receiver_count() == 0)
                && ch.held.is_empty()
                && ch.partial.is_empty()
        });
        if unused {
            inner.threads.remove(thread);
        }
    }

    /// Subscribes to one thread from `from_seq`.
    pub(crate) async fn subscribe(
        &self,
        thread: &ThreadId,
        from_seq: u64,
    ) -> Result<Subscription, EngineError> {
        let mut snap = Snapshot::default();
        let rx = {
            let mut inner = self.lock();
            let buffer = self.buffer;
            let ch = inner.threads.entry(thread.clone()).or_default();
            let rx = ch
                .tx
                .get_or_insert_with(|| broadcast::channel(buffer).0)
                .subscribe();
            ch.snapshot(thread, from_seq, &mut snap);
            rx
        };
        let tail_start = snap.tail.first().map_or(u64::MAX, |e| e.seq);
        let mut backlog: VecDeque<Notification> = VecDeque::new();
        if from_seq < tail_start {
            for e in self.store.events(thread, from_seq).await? {
                if e.seq < tail_start {
                    backlog.push_back(Notification::Event(Arc::new(e)));
                }
            }
        }
        backlog.extend(snap.tail.into_iter().map(Notification::Event));
        backlog.extend(snap.partials.into_iter().map(Notification::Delta));
        Ok(Subscription::new(
            backlog,
            rx,
            ResumeFrom {
                from_seq: 0,
                threads: BTreeMap::from([(thread.clone(), from_seq)]),
            },
        ))
    }

    /// Subscribes to every thread from the given positions.
    /// Every thread's notifications from now on, without replay: nothing
    /// is read from the store. The resume position starts at each known
    /// thread's next seq.
    pub(crate) fn subscribe_all_now(&self) -> Subscription {
        let inner = self.lock();
        let rx = inner.global.subscribe();
        let threads = inner
            .threads
            .iter()
            .filter_map(|(id, ch)| {
                (ch.published > 0).then(|| (id.clone(), ch.published + 1))
            })
            .collect();
        Subscription::new(
            VecDeque::new(),
            rx,
            ResumeFrom {
                from_seq: 1,
                threads,
            },
        )
    }

    pub(crate) async fn subscribe_all(
        &self,
        from: ResumeFrom,
    ) -> Result<Subscription, EngineError> {
        let mut snaps: HashMap<ThreadId, Snapshot> = HashMap::new();
        let rx = {
            let inner = self.lock();
            let rx = inner.global.subscribe();
            for (id, ch) in &inner.threads {
                let mut snap = Snapshot::default();
                ch.snapshot(id, from.start_for(id), &mut snap);
                snaps.insert(id.clone(), snap);
            }
            rx
        };
        let lowest = from
            .threads
            .values()
            .copied()
            .chain([from.from_seq])
            .min()
            .unwrap_or(0);
        let mut backlog: VecDeque<Notification> = VecDeque::new();
        for e in self.store.all_events(lowest).await? {
            let tail_start = snaps
                .get(&e.thread_id)
                .and_then(|s| s.tail.first())
                .map_or(u64::MAX, |t| t.seq);
            if e.seq >= from.start_for(&e.thread_id) && e.seq < tail_start {
                backlog.push_back(Notification::Event(Arc::new(e)));
            }
        }
        for snap in snaps.into_values() {
            backlog.extend(snap.tail.into_iter().map(Notification::Event));
            backlog.extend(snap.partials.into_iter().map(Notification::Delta));
        }
        Ok(Subscription::new(backlog, rx, from))
    }
}

/// A stream of notifications from one thread or all threads.
pub struct Subscription {
    backlog: VecDeque<Notification>,
    rx: broadcast::Receiver<Notification>,
    /// Per thread, the next seq to deliver.
    next: ResumeFrom,
    ended: bool,
}

impl Subscription {
    fn new(
        backlog: VecDeque<Notification>,
        rx: broadcast::Receiver<Notification>,
        next: ResumeFrom,
    ) -> Self {
        Self {
            backlog,
            rx,
            next,
            ended: false,
        }
    }

    /// The next notification; `None` once the subscription ended (after a
    /// [`Notification::Lagged`], or when the engine shut down).
    pub async fn next(&mut self) -> Option<Notification> {
        loop {
            if self.ended {
                return None;
            }
            let n = match self.backlog.pop_front() {
                Some(n) => n,
                None => match self.rx.recv().await {
                    Ok(n) => n,
                    Err(RecvError::Lagged(_)) => {
                        self.ended = true;
                        return Some(Notification::Lagged {
                            resume: self.next.clone(),
                        });
                    }
                    Err(RecvError::Closed) => {
                        self.ended = true;
                        return None;
                    }
                },
            };
            if let Notification::Event(e) = &n {
                let next = self.next.start_for(&e.thread_id);
                if e.seq < next {
                    continue;
                }
                self.next.threads.insert(e.thread_id.clone(), e.seq + 1);
            }
            return Some(n);
        }
    }

    /// Where to resume if this subscription were dropped now.
    pub fn resume_from(&self) -> &ResumeFrom {
        &self.next
    }

    /// The subscription as a `Stream`.
    pub fn into_stream(self) -> impl futures_util::Stream<Item = Notification> + Send {
        futures_util::stream::unfold(self, |mut s| async move { s.next().await.map(|n| (n, s)) })
    }
}

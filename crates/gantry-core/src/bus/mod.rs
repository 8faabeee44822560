//! The event bus: live broadcast of events and deltas, with subscriptions
//! that start anywhere in the log and replay what they missed with no gap
//! and no duplicate: one thread "from seq N", or every thread "from commit
//! cursor C" (each event's position in the order events were stored).
//!
//! Only stored events are published: the store writer publishes each event
//! after its commit, in commit order, so no client ever sees an event that
//! a crash could take back. A delta waits until the event it follows is
//! published, so every subscriber sees a thread's events and deltas in the
//! order they happened.
//!
//! Why no gap: a subscription registers its live receiver and snapshots the
//! in-memory tail under the same lock that publishing takes, and everything
//! published is already in the store. Everything older than the tail is
//! read from the store (page by page for the all-threads feed, so a
//! subscriber far behind costs bounded memory), everything newer reaches
//! the receiver. Why no duplicate: a subscription remembers the next seq
//! (or cursor) it owes and drops anything below it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use gantry_store::Store;
use gantry_types::{Delta, DeltaKind, Event, EventPayload, ItemId, ThreadId, TurnId};
use serde::Serialize;
use tokio::sync::Notify;
use tokio::sync::broadcast::{self, error::RecvError};

use crate::EngineError;

mod subscription;

pub use subscription::Subscription;
use subscription::{Position, Replay};

/// Published events kept in memory per thread, so subscribers that are only
/// a little behind are served without a store query.
const TAIL_KEEP: usize = 64;
/// Published events of all threads kept in memory, for the all-threads feed.
const GLOBAL_TAIL_KEEP: usize = 1024;
/// Events read from the store at once when an all-threads feed catches up.
const REPLAY_PAGE: usize = 512;
/// Text kept per in-progress item for late joiners.
const PARTIAL_CAP: usize = 1024 * 1024;
/// Deltas of one thread that may wait for the event they follow to be
/// stored. At this many its actor takes nothing more from its turn until
/// the store catches up (back-pressure on the turn), so a slow store never
/// lets them pile up. All of them go out at once when it does: kept well
/// under the default subscriber buffer (4096) so that burst lags nobody.
pub const MAX_HELD_DELTAS: usize = 1024;

/// What a subscriber receives.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Notification {
    /// A durable event, already stored.
    Event(Arc<Event>),
    /// Live streaming output, never stored. A subscriber that joins while
    /// an item is in progress first gets one delta with the item's text so
    /// far.
    Delta(Arc<Delta>),
    /// The subscriber fell behind the live feed and missed notifications;
    /// the subscription ends. Subscribing again from `resume_from` (a seq
    /// for a thread's feed, a commit cursor for the all-threads feed)
    /// misses no event: they come from the store.
    Lagged {
        /// The first seq (or cursor) not delivered.
        resume_from: u64,
    },
}

struct Partial {
    turn_id: TurnId,
    kind: fn(String) -> DeltaKind,
    text: String,
}

#[derive(Default)]
struct Channel {
    /// Created by the first subscriber, dropped when the last one leaves,
    /// so idle threads cost no ring buffer.
    tx: Option<broadcast::Sender<Notification>>,
    tail: VecDeque<Arc<Event>>,
    /// The last seq published (and so stored).
    published: u64,
    /// Deltas that follow an event not yet published: at most
    /// [`MAX_HELD_DELTAS`], plus what an interrupted turn still sends (see
    /// [`Bus::publish_delta`]).
    held: VecDeque<Delta>,
    partial: HashMap<ItemId, Partial>,
}

impl Channel {
    fn send(&mut self, n: &Notification) {
        if let Some(tx) = &self.tx
            && tx.send(n.clone()).is_err()
        {
            self.tx = None;
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

    /// The text so far of each in-progress item, as one delta each.
    fn partials<'a>(&'a self, thread: &'a ThreadId) -> impl Iterator<Item = Notification> + 'a {
        self.partial.iter().map(move |(item_id, p)| {
            Notification::Delta(Arc::new(Delta {
                thread_id: thread.clone(),
                turn_id: p.turn_id.clone(),
                item_id: item_id.clone(),
                after_seq: self.published,
                kind: (p.kind)(p.text.clone()),
            }))
        })
    }
}

struct Inner {
    global: broadcast::Sender<Notification>,
    global_tail: VecDeque<Arc<Event>>,
    /// The last commit cursor published.
    cursor: u64,
    threads: HashMap<ThreadId, Channel>,
}

/// The in-process event bus.
pub(crate) struct Bus {
    inner: Mutex<Inner>,
    store: Arc<dyn Store>,
    buffer: usize,
    /// Held deltas went out: actors waiting for room look again.
    released: Notify,
}

impl Bus {
    /// A bus over `store`, whose last committed event has cursor `cursor`.
    pub(crate) fn new(store: Arc<dyn Store>, buffer: usize, cursor: u64) -> Self {
        let buffer = buffer.max(16);
        Self {
            inner: Mutex::new(Inner {
                global: broadcast::channel(buffer).0,
                global_tail: VecDeque::new(),
                cursor,
                threads: HashMap::new(),
            }),
            store,
            buffer,
            released: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every
        // mutation is a single push/pop), so poisoning is safe to ignore.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes a stored event (called by the store writer after its
    /// commit, in commit order), then the deltas that follow it.
    pub(crate) fn publish_event(&self, event: Arc<Event>) {
        if self.publish_event_locked(event) {
            self.released.notify_waiters();
        }
    }

    /// [`Bus::publish_event`] under the lock; true if held deltas went out.
    fn publish_event_locked(&self, event: Arc<Event>) -> bool {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let n = Notification::Event(event.clone());
        let _ = inner.global.send(n.clone());
        inner.cursor = inner.cursor.max(event.cursor);
        inner.global_tail.push_back(event.clone());
        if inner.global_tail.len() > GLOBAL_TAIL_KEEP {
            inner.global_tail.pop_front();
        }
        let ch = inner.threads.entry(event.thread_id.clone()).or_default();
        if let EventPayload::ItemCompleted { item } = &event.payload {
            ch.partial.remove(&item.id);
        }
        ch.published = ch.published.max(event.seq);
        ch.tail.push_back(event);
        if ch.tail.len() > TAIL_KEEP {
            ch.tail.pop_front();
        }
        ch.send(&n);
        let mut released = false;
        while ch.held.front().is_some_and(|d| d.after_seq <= ch.published) {
            if let Some(delta) = ch.held.pop_front() {
                ch.deliver(delta, &inner.global);
                released = true;
            }
        }
        released
    }

    /// Publishes a live delta, once the event it follows is published.
    /// True when the thread now holds [`MAX_HELD_DELTAS`] or more: its actor
    /// then waits for [`Bus::room_for_deltas`] before taking more.
    pub(crate) fn publish_delta(&self, delta: Delta) -> bool {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let ch = inner.threads.entry(delta.thread_id.clone()).or_default();
        if delta.after_seq <= ch.published && ch.held.is_empty() {
            ch.deliver(delta, &inner.global);
        } else {
            ch.held.push_back(delta);
        }
        ch.held.len() >= MAX_HELD_DELTAS
    }

    /// Returns once the thread holds fewer than [`MAX_HELD_DELTAS`] deltas
    /// (the store has caught up with the events they follow).
    pub(crate) async fn room_for_deltas(&self, thread: &ThreadId) {
        loop {
            // Registered before looking, so a release in between wakes us.
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            let held = self
                .lock()
                .threads
                .get(thread)
                .map_or(0, |ch| ch.held.len());
            if held < MAX_HELD_DELTAS {
                return;
            }
            released.await;
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

    /// Forgets a deleted thread: its channel (its subscribers' feeds end)
    /// and its events in the all-threads tail (the store has none either).
    pub(crate) fn forget(&self, thread: &ThreadId) {
        let mut inner = self.lock();
        inner.threads.remove(thread);
        inner.global_tail.retain(|e| e.thread_id != *thread);
    }

    /// A thread subscription is gone: drop the thread's ring buffer when it
    /// was the last one listening (`rx` is still alive, hence `<= 1`).
    fn release(&self, thread: &ThreadId) {
        let mut inner = self.lock();
        if let Some(ch) = inner.threads.get_mut(thread)
            && ch.tx.as_ref().is_some_and(|tx| tx.receiver_count() <= 1)
        {
            ch.tx = None;
        }
    }

    /// Subscribes to one thread from `from_seq`.
    pub(crate) async fn subscribe(
        self: &Arc<Self>,
        thread: &ThreadId,
        from_seq: u64,
    ) -> Result<Subscription, EngineError> {
        let (rx, tail, partials) = {
            let mut inner = self.lock();
            let buffer = self.buffer;
            let ch = inner.threads.entry(thread.clone()).or_default();
            let rx = ch
                .tx
                .get_or_insert_with(|| broadcast::channel(buffer).0)
                .subscribe();
            let tail: Vec<Arc<Event>> = ch
                .tail
                .iter()
                .filter(|e| e.seq >= from_seq)
                .cloned()
                .collect();
            let partials: Vec<Notification> = ch.partials(thread).collect();
            (rx, tail, partials)
        };
        let mut sub = Subscription::new(rx, Position::Seq(from_seq));
        sub.release = Some((Arc::downgrade(self), thread.clone()));
        let tail_start = tail.first().map_or(u64::MAX, |e| e.seq);
        if from_seq < tail_start {
            for e in self.store.events(thread, from_seq).await? {
                if e.seq < tail_start {
                    sub.backlog.push_back(Notification::Event(Arc::new(e)));
                }
            }
        }
        sub.backlog
            .extend(tail.into_iter().map(Notification::Event).chain(partials));
        Ok(sub)
    }

    /// Every thread's notifications from now on: nothing is replayed.
    pub(crate) fn subscribe_all_now(&self) -> Subscription {
        let inner = self.lock();
        Subscription::new(inner.global.subscribe(), Position::Cursor(inner.cursor + 1))
    }

    /// Every thread's events from commit cursor `from` on (stored ones
    /// first, page by page), then live events and deltas.
    pub(crate) async fn subscribe_all(&self, from: u64) -> Result<Subscription, EngineError> {
        let (rx, tail, partials, next_live) = {
            let inner = self.lock();
            let tail: Vec<Arc<Event>> = inner
                .global_tail
                .iter()
                .filter(|e| e.cursor >= from)
                .cloned()
                .collect();
            let partials: Vec<Notification> = inner
                .threads
                .iter()
                .flat_map(|(id, ch)| ch.partials(id))
                .collect();
            (inner.global.subscribe(), tail, partials, inner.cursor + 1)
        };
        let tail_start = tail.first().map_or(next_live, |e| e.cursor);
        let mut sub = Subscription::new(rx, Position::Cursor(from));
        sub.after_replay = tail
            .into_iter()
            .map(Notification::Event)
            .chain(partials)
            .collect();
        if from >= tail_start {
            sub.backlog = std::mem::take(&mut sub.after_replay);
        } else {
            let mut replay = Replay {
                store: self.store.clone(),
                next: from,
                until: tail_start,
            };
            // The first page now, so a failing store is an error here.
            sub.backlog = replay.page().await?;
            sub.replay = Some(replay);
        }
        Ok(sub)
    }
}

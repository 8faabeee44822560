//! Applies the runners' updates to agents, threads, turns and items. Each
//! change to a thread is appended to its update log with the next seq and
//! then broadcast to the thread's live followers.
//!
//! Updates carry no thread id in 0.2.0: an update is attributed through the
//! request it echoes (`request_id` -> agent, thread, turn, kept in the store
//! so the attribution survives a restart). 0.7.0's name their thread (and
//! turn), which attributes those that echo no request of ours (a runner's
//! own updates, an interrupt's answer); thread names and token usage are
//! kept with the thread.
//!
//! A runner's queued updates are applied as one batch: read through the
//! [`cache`] (else the store), merged, then written in one transaction by
//! the [`writer`], which groups the batches of every runner.

mod agents;
mod batch;
mod cache;
pub(crate) mod merge;
mod threads;
mod writer;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use gantry_runner_protocol::messages::{ClientMessage, Payload};
use tokio::sync::{Mutex, broadcast};

use super::now_ms;
use crate::nats::Cluster;
use crate::registry::Registry;
use crate::store::{
    ControlPlaneStore, RequestRecord, StoreError, ThreadRecord, ThreadUpdateRecord, TurnRecord,
    Write,
};
use batch::Batch;
use cache::Cache;
use writer::Writer;

/// Thread updates a slow follower may fall behind before it rereads the store.
const BROADCAST_CAPACITY: usize = 1024;

/// Applies updates: one runner's one batch at a time, runners side by side.
pub(crate) struct Tracker {
    store: Arc<dyn ControlPlaneStore>,
    /// With replicas: where committed updates are published, and why
    /// memory answers only for runners whose channel is here.
    cluster: Option<Cluster>,
    cache: Cache,
    writer: Writer,
    /// Per runner: its updates each read state, merge, then write, so two
    /// of them (an old channel's and a new one's, just after a reconnect)
    /// must not interleave. Runners never share agents or threads, so they
    /// need no order between them.
    serial: std::sync::Mutex<HashMap<String, Arc<Mutex<()>>>>,
    updates: broadcast::Sender<ThreadUpdateRecord>,
}

/// What one update is applied with.
struct Context<'a> {
    tracker: &'a Tracker,
    runner_id: &'a str,
    /// The request the update answers, when it echoes one of this runner's.
    request: Option<RequestRecord>,
    now: i64,
    /// What the runner's batch has written so far.
    batch: &'a mut Batch,
}

impl Tracker {
    /// A tracker writing to `store` (starts its writer task).
    pub(crate) fn new(store: Arc<dyn ControlPlaneStore>, cluster: Option<Cluster>) -> Self {
        Self {
            writer: Writer::start(store.clone()),
            cluster,
            store,
            cache: Cache::default(),
            serial: std::sync::Mutex::default(),
            updates: broadcast::channel(BROADCAST_CAPACITY).0,
        }
    }

    /// Every thread update applied from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ThreadUpdateRecord> {
        self.updates.subscribe()
    }

    /// Records a request about to be sent: kept in memory now, queued for
    /// the store ahead of any reply to it. The future is its commit.
    pub(crate) fn record_request(
        &self,
        request: RequestRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + use<> {
        self.cache.put_request(request.clone());
        let written = self.writer.submit(vec![Write::Request(request)]);
        async move { written.await.map(drop) }
    }

    /// The thread `id`, from memory when kept and written here.
    pub(crate) async fn thread(
        &self,
        id: &str,
        registry: &Registry,
    ) -> Result<Option<ThreadRecord>, StoreError> {
        match self
            .cache
            .thread_record(id)
            .filter(|t| self.trusted(registry, &t.runner_id))
        {
            Some(thread) => Ok(Some(thread)),
            None => self.store.thread(id).await,
        }
    }

    /// A turn of a thread, from memory when it is the thread's latest and
    /// written here.
    pub(crate) async fn turn(
        &self,
        thread_id: &str,
        id: &str,
        registry: &Registry,
    ) -> Result<Option<TurnRecord>, StoreError> {
        let here = self
            .cache
            .thread_record(thread_id)
            .is_some_and(|t| self.trusted(registry, &t.runner_id));
        match self.cache.turn(thread_id, id).filter(|_| here) {
            Some(turn) => Ok(Some(turn)),
            None => self.store.turn(thread_id, id).await,
        }
    }

    /// Whether memory may answer for a thread of `runner_id`: alone, this
    /// process writes every thread; among replicas, only the one holding
    /// the runner's channel writes its threads (another replica's memory
    /// of them may be stale).
    fn trusted(&self, registry: &Registry, runner_id: &str) -> bool {
        self.cluster.is_none() || registry.is_here(runner_id)
    }

    /// A runner's channel opened here: what is kept of its threads may be
    /// stale (another replica may have had it meanwhile).
    pub(crate) fn runner_connected(&self, runner_id: &str) {
        self.cache.forget_runner(runner_id);
    }

    /// Another replica holds the runner now: what is kept of its threads
    /// will go stale.
    pub(crate) fn forget_runner(&self, runner_id: &str) {
        self.cache.forget_runner(runner_id);
    }

    /// Another replica wrote the thread: what is kept of it is stale.
    pub(crate) fn forget_thread(&self, thread_id: &str) {
        self.cache.forget_thread(thread_id);
    }

    /// Applies (validated) messages of `runner_id`, in order, as one batch
    /// written in one transaction: when this returns `Ok`, all of it is
    /// committed and broadcast.
    /// Returns how many thread updates it committed.
    pub(crate) async fn apply(
        &self,
        runner_id: &str,
        messages: &[ClientMessage],
    ) -> Result<usize, StoreError> {
        let serial = self.serial_of(runner_id);
        let _serial = serial.lock().await;
        let mut batch = Batch::default();
        for message in messages {
            self.apply_one(runner_id, message, &mut batch).await?;
        }
        self.commit(batch).await
    }

    /// Records an interrupt about to be sent: the request, in one batch
    /// with the mark it puts on its thread's running turn (`interrupting`),
    /// committed before it goes out, so the runner's answer, the turn's
    /// end, finds the mark and reads as interrupted.
    pub(crate) async fn record_interrupt(&self, request: RequestRecord) -> Result<(), StoreError> {
        let runner_id = request.runner_id.clone();
        let serial = self.serial_of(&runner_id);
        let _serial = serial.lock().await;
        let mut batch = Batch::default();
        let thread_id = request.thread_id.clone();
        let mut ctx = Context {
            tracker: self,
            runner_id: &runner_id,
            request: None,
            now: now_ms(),
            batch: &mut batch,
        };
        ctx.put_request(request);
        if let Some(thread_id) = thread_id {
            threads::interrupting(&mut ctx, &thread_id).await?;
        }
        self.commit(batch).await.map(drop)
    }

    /// Writes a batch in one transaction, then keeps and broadcasts what
    /// it wrote; how many thread updates it committed. Called under the
    /// runner's lock, so its runner's batches are published in commit order.
    async fn commit(&self, mut batch: Batch) -> Result<usize, StoreError> {
        if batch.writes.is_empty() {
            return Ok(0);
        }
        let written = self.writer.submit(std::mem::take(&mut batch.writes)).await;
        let entries = match written {
            Ok(entries) => entries,
            Err(e) => {
                // What is kept of these threads may be what failed (say,
                // another replica wrote them meanwhile): read them again.
                for thread_id in batch.threads.keys() {
                    self.cache.forget_thread(thread_id);
                }
                return Err(e);
            }
        };
        self.cache.committed(batch.threads, batch.requests);
        let count = entries.len();
        if let Some(cluster) = &self.cluster {
            cluster.publish(&entries).await;
        }
        for entry in entries {
            // No follower is not an error.
            let _ = self.updates.send(entry);
        }
        Ok(count)
    }

    /// Adds what one message changes to `batch`.
    async fn apply_one(
        &self,
        runner_id: &str,
        message: &ClientMessage,
        batch: &mut Batch,
    ) -> Result<(), StoreError> {
        let payload = &message.payload;
        if matches!(
            payload,
            Payload::Heartbeat | Payload::Sdk(_) | Payload::CodexDeviceCode { .. }
        ) {
            return Ok(());
        }
        let request = match message.request_id.as_deref() {
            Some(id) => self.request_of(runner_id, id, batch).await?,
            None => None,
        };
        let mut ctx = Context {
            tracker: self,
            runner_id,
            request,
            now: now_ms(),
            batch,
        };
        match payload {
            Payload::Agent { agent_id, status } => {
                agents::agent_update(&mut ctx, agent_id, *status).await
            }
            Payload::SkillPackage {
                agent_id,
                package_name,
                status,
            } => agents::skill_update(&mut ctx, agent_id, package_name, *status).await,
            Payload::Thread { thread_id, status } => {
                threads::thread_update(&mut ctx, thread_id, *status).await
            }
            Payload::Turn(u) => threads::turn_update(&mut ctx, u).await,
            Payload::Item(u) => threads::item_update(&mut ctx, u).await,
            Payload::RequestError { error_message } => {
                threads::request_error(&mut ctx, error_message).await
            }
            Payload::ThreadName {
                thread_id,
                thread_name,
            } => threads::thread_name(&mut ctx, thread_id, thread_name.as_deref()).await,
            Payload::TokenUsage(u) => threads::token_usage(&mut ctx, u).await,
            Payload::Heartbeat | Payload::Sdk(_) | Payload::CodexDeviceCode { .. } => Ok(()),
        }
    }

    /// The lock that orders `runner_id`'s updates.
    fn serial_of(&self, runner_id: &str) -> Arc<Mutex<()>> {
        // Every change under this lock is one insert: a poisoned map is whole.
        let mut locks = self.serial.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(runner_id.to_owned()).or_default().clone()
    }

    /// The request `id`, if `runner_id` was sent it: a runner cannot have
    /// its updates attributed to another runner's requests.
    async fn request_of(
        &self,
        runner_id: &str,
        id: &str,
        batch: &Batch,
    ) -> Result<Option<RequestRecord>, StoreError> {
        let request = match batch.requests.get(id).cloned() {
            Some(r) => Some(r),
            None => match self.cache.request(id) {
                Some(r) => Some(r),
                None => {
                    let stored = self.store.request(id).await?;
                    if let Some(r) = &stored {
                        self.cache.put_request(r.clone());
                    }
                    stored
                }
            },
        };
        match request {
            Some(r) if r.runner_id == runner_id => Ok(Some(r)),
            Some(_) => {
                tracing::warn!(
                    runner = runner_id,
                    request = id,
                    "runner echoed another runner's request id; ignoring the attribution"
                );
                Ok(None)
            }
            None => {
                tracing::debug!(
                    runner = runner_id,
                    request = id,
                    "update echoes an unknown request id"
                );
                Ok(None)
            }
        }
    }
}

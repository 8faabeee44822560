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

mod agents;
pub(crate) mod merge;
mod threads;

use std::collections::HashMap;
use std::sync::Arc;

use gantry_runner_protocol::messages::{ClientMessage, Payload};
use tokio::sync::{Mutex, broadcast};

use super::now_ms;
use crate::store::{ControlPlaneStore, RequestRecord, StoreError, ThreadUpdateRecord};

/// Thread updates a slow follower may fall behind before it rereads the store.
const BROADCAST_CAPACITY: usize = 1024;

/// Applies updates: one runner's one at a time, runners side by side.
pub(crate) struct Tracker {
    store: Arc<dyn ControlPlaneStore>,
    /// Per runner: its updates each read state, merge, then write, so two
    /// of them (an old channel's and a new one's, just after a reconnect)
    /// must not interleave. Runners never share agents or threads, so they
    /// need no order between them.
    serial: std::sync::Mutex<HashMap<String, Arc<Mutex<()>>>>,
    updates: broadcast::Sender<ThreadUpdateRecord>,
}

/// What an update is applied with.
struct Context<'a> {
    store: &'a dyn ControlPlaneStore,
    runner_id: &'a str,
    /// The request the update answers, when it echoes one of this runner's.
    request: Option<&'a RequestRecord>,
    now: i64,
}

impl Tracker {
    /// A tracker writing to `store`.
    pub(crate) fn new(store: Arc<dyn ControlPlaneStore>) -> Self {
        Self {
            store,
            serial: std::sync::Mutex::default(),
            updates: broadcast::channel(BROADCAST_CAPACITY).0,
        }
    }

    /// Every thread update applied from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ThreadUpdateRecord> {
        self.updates.subscribe()
    }

    /// Applies one (validated) message of `runner_id`.
    pub(crate) async fn apply(
        &self,
        runner_id: &str,
        message: &ClientMessage,
    ) -> Result<(), StoreError> {
        let payload = &message.payload;
        if matches!(
            payload,
            Payload::Heartbeat | Payload::Sdk(_) | Payload::CodexDeviceCode { .. }
        ) {
            return Ok(());
        }
        let serial = self.serial_of(runner_id);
        let _serial = serial.lock().await;
        let request = match message.request_id.as_deref() {
            Some(id) => self.request_of(runner_id, id).await?,
            None => None,
        };
        let context = Context {
            store: self.store.as_ref(),
            runner_id,
            request: request.as_ref(),
            now: now_ms(),
        };
        let entry = match payload {
            Payload::Agent { agent_id, status } => {
                agents::agent_update(&context, agent_id, *status).await?;
                None
            }
            Payload::SkillPackage {
                agent_id,
                package_name,
                status,
            } => {
                agents::skill_update(&context, agent_id, package_name, *status).await?;
                None
            }
            Payload::Thread { thread_id, status } => {
                threads::thread_update(&context, thread_id, *status).await?
            }
            Payload::Turn(u) => threads::turn_update(&context, u).await?,
            Payload::Item(u) => threads::item_update(&context, u).await?,
            Payload::RequestError { error_message } => {
                threads::request_error(&context, error_message).await?
            }
            Payload::ThreadName {
                thread_id,
                thread_name,
            } => threads::thread_name(&context, thread_id, thread_name.as_deref()).await?,
            Payload::TokenUsage(u) => threads::token_usage(&context, u).await?,
            Payload::Heartbeat | Payload::Sdk(_) | Payload::CodexDeviceCode { .. } => None,
        };
        if let Some(entry) = entry {
            // No follower is not an error.
            let _ = self.updates.send(entry);
        }
        Ok(())
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
    ) -> Result<Option<RequestRecord>, StoreError> {
        let request = self.store.request(id).await?;
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

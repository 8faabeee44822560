//! Requests to runners: sent over the runner's channel, answered by the
//! first reply echoing their `request_id`, abandoned after a timeout. A
//! request still waiting when its runner reconnects is sent again with the
//! same id (the runner does not act on an id twice).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use gantry_runner_protocol::messages::{Payload, ServerMessage};
use tokio::sync::{oneshot, watch};

use crate::registry::{Outbox, Registry};

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DispatchError {
    /// The runner has no open channel.
    #[error("runner {0} is not connected")]
    Offline(String),
    /// The runner did not answer in time.
    #[error("runner {runner} did not answer request {request_id} within {timeout:?}")]
    Timeout {
        /// The runner asked.
        runner: String,
        /// The request.
        request_id: String,
        /// How long it had.
        timeout: Duration,
    },
}

/// Requests waiting for their first reply.
pub(crate) struct Dispatcher {
    timeout: Duration,
    pending: Mutex<Pending>,
    /// How many requests wait for their reply, for a drain to wait on.
    in_flight: watch::Sender<usize>,
}

#[derive(Default)]
struct Pending {
    waiting: HashMap<String, Waiting>,
    /// Source of `Waiting::order`, so re-sends keep the original order.
    next: u64,
}

struct Waiting {
    runner_id: String,
    message: ServerMessage,
    order: u64,
    reply: oneshot::Sender<Payload>,
}

impl Dispatcher {
    /// A dispatcher giving each request `timeout` to be answered.
    pub(crate) fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            pending: Mutex::new(Pending::default()),
            in_flight: watch::Sender::new(0),
        }
    }

    /// How long a runner gets to answer.
    pub(crate) fn timeout(&self) -> std::time::Duration {
        self.timeout
    }

    /// Requests waiting for their first reply.
    pub(crate) fn in_flight(&self) -> usize {
        *self.in_flight.borrow()
    }

    /// Completes when no request waits for a reply.
    pub(crate) async fn idle(&self) {
        let mut in_flight = self.in_flight.subscribe();
        // The sender lives as long as `self`.
        let _ = in_flight.wait_for(|n| *n == 0).await;
    }

    /// Publishes the number of waiting requests after a change under the lock.
    fn count(&self, pending: &Pending) {
        self.in_flight.send_replace(pending.waiting.len());
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        // Every change under the lock is one insert or remove: still consistent.
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sends `message` (whose `request_id` is set) to the runner and waits
    /// for the first reply to it.
    pub(crate) async fn request(
        &self,
        registry: &Registry,
        runner_id: &str,
        message: ServerMessage,
    ) -> Result<Payload, DispatchError> {
        let request_id = message.request_id.clone().unwrap_or_default();
        let Some(outbox) = registry.outbox(runner_id) else {
            return Err(DispatchError::Offline(runner_id.to_owned()));
        };
        let (reply, answered) = oneshot::channel();
        {
            let mut pending = self.pending();
            pending.next += 1;
            let order = pending.next;
            pending.waiting.insert(
                request_id.clone(),
                Waiting {
                    runner_id: runner_id.to_owned(),
                    message: message.clone(),
                    order,
                    reply,
                },
            );
            self.count(&pending);
        }
        // Removed however this ends: answered, timed out, or the caller gone.
        let _forget = Forget {
            dispatcher: self,
            request_id: &request_id,
        };
        let exchange = async {
            if outbox.send(message).await.is_err() {
                // The channel closed under us: the request stays pending and
                // goes out again when the runner reconnects.
                tracing::debug!(runner = runner_id, request = %request_id, "channel closed; request waits for the runner to reconnect");
            }
            drop(outbox);
            answered.await
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(Ok(payload)) => Ok(payload),
            // The reply sender is only dropped with its entry, by `_forget`
            // or an answer: treat a lost one as no answer.
            Ok(Err(_)) | Err(_) => Err(DispatchError::Timeout {
                runner: runner_id.to_owned(),
                request_id: request_id.clone(),
                timeout: self.timeout,
            }),
        }
    }

    /// Sends `message` to the runner without waiting for a reply (0.7.0's
    /// interrupt: CompanyHelm's runner answers it with the turn's end, not
    /// by its request id).
    pub(crate) async fn send(
        &self,
        registry: &Registry,
        runner_id: &str,
        message: ServerMessage,
    ) -> Result<(), DispatchError> {
        let Some(outbox) = registry.outbox(runner_id) else {
            return Err(DispatchError::Offline(runner_id.to_owned()));
        };
        outbox
            .send(message)
            .await
            .map_err(|_| DispatchError::Offline(runner_id.to_owned()))
    }

    /// Hands a runner's reply to the request waiting for it; false if none
    /// was (already answered, timed out, or not ours).
    pub(crate) fn complete(&self, runner_id: &str, request_id: &str, payload: Payload) -> bool {
        let waiting = {
            let mut pending = self.pending();
            let waiting = match pending.waiting.get(request_id) {
                Some(w) if w.runner_id == runner_id => pending.waiting.remove(request_id),
                _ => None,
            };
            self.count(&pending);
            waiting
        };
        waiting.is_some_and(|w| w.reply.send(payload).is_ok())
    }

    /// Sends again, in their original order, the requests still waiting for
    /// a runner that just opened `outbox`.
    pub(crate) async fn resend(&self, runner_id: &str, outbox: &Outbox) {
        let mut messages: Vec<(u64, ServerMessage)> = self
            .pending()
            .waiting
            .values()
            .filter(|w| w.runner_id == runner_id)
            .map(|w| (w.order, w.message.clone()))
            .collect();
        messages.sort_by_key(|(order, _)| *order);
        for (_, message) in messages {
            tracing::debug!(runner = runner_id, request = ?message.request_id, "re-sending a pending request");
            if outbox.send(message).await.is_err() {
                // Gone again; the next channel gets them.
                return;
            }
        }
    }
}

/// Removes a request from the pending ones when its caller is done.
struct Forget<'a> {
    dispatcher: &'a Dispatcher,
    request_id: &'a str,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        let mut pending = self.dispatcher.pending();
        pending.waiting.remove(self.request_id);
        self.dispatcher.count(&pending);
    }
}

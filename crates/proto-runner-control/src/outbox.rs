//! What the runner has to say to the control plane: a bounded queue that
//! holds updates while the channel is down (a full queue holds the engine's
//! followers back, which then catch up from the event log), and the tail of
//! what was written to a channel that broke, to say again on the next one.

use std::collections::VecDeque;

use gantry_runner_protocol::messages::ClientMessage;
use tokio::sync::mpsc;

/// Messages queued while no channel is open, at most.
pub(crate) const CAPACITY: usize = 1024;

/// Messages written to a channel that are said again after it breaks: the
/// ones that may have been in flight. Updates are idempotent, so saying one
/// twice is harmless; losing one is not.
pub(crate) const UNCONFIRMED: usize = 256;

/// The sending side, shared by request handlers and thread followers.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: mpsc::Sender<ClientMessage>,
}

/// The runner is shutting down: nothing more will be sent.
#[derive(Debug)]
pub(crate) struct Closed;

impl Outbox {
    /// A queue of [`CAPACITY`] and its receiving side.
    pub(crate) fn new() -> (Outbox, mpsc::Receiver<ClientMessage>) {
        let (tx, rx) = mpsc::channel(CAPACITY);
        (Outbox { tx }, rx)
    }

    /// Queues a message, waiting while the queue is full.
    pub(crate) async fn send(&self, message: ClientMessage) -> Result<(), Closed> {
        self.tx.send(message).await.map_err(|_| Closed)
    }
}

/// The last [`UNCONFIRMED`] messages written to the current channel.
#[derive(Default)]
pub(crate) struct Unconfirmed {
    recent: VecDeque<ClientMessage>,
}

impl Unconfirmed {
    /// Remembers a message as written.
    pub(crate) fn push(&mut self, message: ClientMessage) {
        if self.recent.len() == UNCONFIRMED {
            self.recent.pop_front();
        }
        self.recent.push_back(message);
    }

    /// The remembered messages, oldest first (they stay remembered: they
    /// are unconfirmed on the next channel too).
    pub(crate) fn replay(&self) -> impl Iterator<Item = &ClientMessage> {
        self.recent.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(n: usize) -> ClientMessage {
        ClientMessage {
            request_id: Some(n.to_string()),
            payload: gantry_runner_protocol::messages::Payload::Heartbeat,
        }
    }

    #[test]
    fn only_the_most_recent_messages_are_said_again() {
        let mut unconfirmed = Unconfirmed::default();
        for n in 0..UNCONFIRMED + 10 {
            unconfirmed.push(message(n));
        }
        let ids: Vec<_> = unconfirmed
            .replay()
            .map(|m| m.request_id.clone().unwrap_or_default())
            .collect();
        assert_eq!(ids.len(), UNCONFIRMED);
        assert_eq!(ids[0], "10");
        assert_eq!(ids[UNCONFIRMED - 1], (UNCONFIRMED + 9).to_string());
    }
}

//! The runners as this process sees them: what each offers, and the channel
//! of each connected one. A runner that opens a new channel replaces its old
//! one; the old one's end is ignored.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::mpsc;
use tonic::Status;

use super::offers::SdkOffer;
use crate::pb;

/// Where messages to one connected runner go: its ControlChannel's stream.
pub(crate) type Outbox = mpsc::Sender<Result<pb::ServerMessage, Status>>;

/// Connected runners and their offers.
#[derive(Default)]
pub(crate) struct Registry {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Latest registration of each runner (from the store at start).
    offers: HashMap<String, Vec<SdkOffer>>,
    /// Open channels, by runner id.
    channels: HashMap<String, Channel>,
    /// Source of channel ids.
    next_channel: u64,
}

struct Channel {
    id: u64,
    outbox: Outbox,
}

impl Registry {
    /// The state; a panic elsewhere while holding the lock leaves the maps
    /// consistent (every change is one insert or remove), so keep going.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records what a runner offers.
    pub(crate) fn set_offers(&self, runner_id: &str, offers: Vec<SdkOffer>) {
        self.state().offers.insert(runner_id.to_owned(), offers);
    }

    /// What a runner offers (empty if it never registered).
    pub(crate) fn offers(&self, runner_id: &str) -> Vec<SdkOffer> {
        self.state()
            .offers
            .get(runner_id)
            .cloned()
            .unwrap_or_default()
    }

    /// Makes `outbox` the runner's channel, replacing (and so closing) any
    /// previous one; returns the channel's id for [`Registry::disconnect`].
    pub(crate) fn connect(&self, runner_id: &str, outbox: Outbox) -> u64 {
        let mut state = self.state();
        state.next_channel += 1;
        let id = state.next_channel;
        let replaced = state
            .channels
            .insert(runner_id.to_owned(), Channel { id, outbox });
        if replaced.is_some() {
            tracing::info!(
                runner = runner_id,
                "runner reconnected; its previous channel is closed"
            );
        }
        id
    }

    /// Forgets the runner's channel if it is still `channel`.
    pub(crate) fn disconnect(&self, runner_id: &str, channel: u64) {
        let mut state = self.state();
        if state
            .channels
            .get(runner_id)
            .is_some_and(|c| c.id == channel)
        {
            state.channels.remove(runner_id);
        }
    }

    /// The runner's channel, if it is connected.
    pub(crate) fn outbox(&self, runner_id: &str) -> Option<Outbox> {
        self.state()
            .channels
            .get(runner_id)
            .map(|c| c.outbox.clone())
    }

    /// Whether the runner has an open channel.
    pub(crate) fn is_connected(&self, runner_id: &str) -> bool {
        self.state().channels.contains_key(runner_id)
    }

    /// Connected runners and what they offer.
    pub(crate) fn connected(&self) -> Vec<(String, Vec<SdkOffer>)> {
        let state = self.state();
        state
            .channels
            .keys()
            .map(|id| {
                (
                    id.clone(),
                    state.offers.get(id).cloned().unwrap_or_default(),
                )
            })
            .collect()
    }

    /// Closes every channel (the runners see their stream end).
    pub(crate) fn close_all(&self) {
        self.state().channels.clear();
    }
}

//! The runners as this process sees them: what each offers, the protocol
//! version each speaks, the channel of each connected one, and whether it
//! is healthy (a 0.7.0 runner that stops answering heartbeats is not; see
//! `liveness`): only healthy runners get new work.
//!
//! A runner has one channel at a time. A second connection with the same
//! identity while the first channel is alive is refused ([`Busy`]): two
//! processes sharing a token would otherwise displace each other forever.
//! "Alive" means its stream is still open on our side: a runner that closed
//! it (or whose connection broke visibly) is let in, after a short wait for
//! the close to be seen ([`HANDOVER`]); one whose connection died unseen
//! (half-open TCP) is let in once the server's HTTP/2 keepalive ping goes
//! unanswered and closes it (`ControlPlaneOptions::keepalive`), which ends
//! the old stream. So a refused runner only has to retry with backoff.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use gantry_runner_protocol::ProtocolVersion;
use gantry_runner_protocol::messages::ServerMessage;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::offers::SdkOffer;

mod remote;

pub(crate) use remote::Remote;

/// Where messages to one connected runner go: its ControlChannel's stream
/// (encoded in the runner's version there).
pub(crate) type Outbox = mpsc::Sender<ServerMessage>;

/// Connected runners and their offers.
#[derive(Default)]
pub(crate) struct Registry {
    state: Mutex<State>,
    /// Bumped when what `GET /v1/runners` shows changes (a channel opened
    /// or ended, health, offers, another replica's runners), for the
    /// dashboard's live view; never by heartbeats that change nothing.
    changes: tokio::sync::watch::Sender<()>,
}

#[derive(Default)]
struct State {
    /// Latest registration of each runner (from the store at start).
    offers: HashMap<String, Vec<SdkOffer>>,
    /// Open channels, by runner id.
    channels: HashMap<String, Channel>,
    /// Source of channel ids.
    next_channel: u64,
    /// The version each runner spoke at its last registration.
    versions: HashMap<String, ProtocolVersion>,
    /// Connected runners that missed their heartbeats.
    unhealthy: std::collections::HashSet<String>,
    /// When each runner last answered a heartbeat.
    heard: HashMap<String, Instant>,
    /// Runners whose channel is on another replica (see `remote`).
    remote: HashMap<String, remote::Remote>,
    /// Other replicas, and until when each is known alive.
    replicas: HashMap<String, Instant>,
}

/// How long a new connection waits for the runner's previous channel to
/// be seen ending (a reconnecting runner's old stream closes as it dials
/// again) before it is refused.
pub(crate) const HANDOVER: Duration = Duration::from_secs(1);

struct Channel {
    id: u64,
    outbox: Outbox,
    /// Where the runner connected from.
    peer: Option<SocketAddr>,
    /// Cancelled when the channel's reading ends.
    ended: CancellationToken,
}

impl Channel {
    /// Whether the stream is still open on our side.
    fn alive(&self) -> bool {
        !self.ended.is_cancelled() && !self.outbox.is_closed()
    }
}

/// A runner's live channel, in the way of a second connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Busy {
    /// Where the live channel's runner connected from.
    pub peer: Option<SocketAddr>,
}

/// A channel made the runner's by [`Registry::connect`].
pub(crate) struct Opened {
    /// Its id, for [`Registry::disconnect`].
    pub id: u64,
    /// To cancel when its reading ends.
    pub ended: CancellationToken,
}

impl Registry {
    /// The state; a panic elsewhere while holding the lock leaves the maps
    /// consistent (every change is one insert or remove), so keep going.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Tells whoever watches the runners that they changed.
    fn changed(&self) {
        self.changes.send_replace(());
    }

    /// Wakes when the runners change (see `changes`).
    pub(crate) fn watch(&self) -> tokio::sync::watch::Receiver<()> {
        self.changes.subscribe()
    }

    /// Records what a runner offers.
    pub(crate) fn set_offers(&self, runner_id: &str, offers: Vec<SdkOffer>) {
        self.state().offers.insert(runner_id.to_owned(), offers);
        self.changed();
    }

    /// Records the version a runner registered with.
    pub(crate) fn set_version(&self, runner_id: &str, version: ProtocolVersion) {
        self.state().versions.insert(runner_id.to_owned(), version);
    }

    /// The version a runner speaks: `pinned`, else the one of its last
    /// registration, else 0.2.
    pub(crate) fn version(
        &self,
        runner_id: &str,
        pinned: Option<ProtocolVersion>,
    ) -> ProtocolVersion {
        pinned
            .or_else(|| {
                let state = self.state();
                let local = state.versions.get(runner_id).copied();
                match state.channels.contains_key(runner_id) {
                    true => local,
                    false => remote::live(&state, runner_id).map(|r| r.version).or(local),
                }
            })
            .unwrap_or_default()
    }

    /// A runner answered a heartbeat: it is healthy.
    pub(crate) fn heard(&self, runner_id: &str) {
        let mut state = self.state();
        state.heard.insert(runner_id.to_owned(), Instant::now());
        if state.unhealthy.remove(runner_id) {
            drop(state);
            tracing::info!(
                runner = runner_id,
                "runner answers heartbeats again: healthy"
            );
            self.changed();
        }
    }

    /// When a runner last answered a heartbeat.
    pub(crate) fn last_heard(&self, runner_id: &str) -> Option<Instant> {
        self.state().heard.get(runner_id).copied()
    }

    /// Marks a runner unhealthy (it gets no new work); true if it was healthy.
    pub(crate) fn mark_unhealthy(&self, runner_id: &str) -> bool {
        let was_healthy = self.state().unhealthy.insert(runner_id.to_owned());
        if was_healthy {
            self.changed();
        }
        was_healthy
    }

    /// Whether a runner is connected and not marked unhealthy.
    pub(crate) fn is_healthy(&self, runner_id: &str) -> bool {
        let state = self.state();
        match state.channels.contains_key(runner_id) {
            true => !state.unhealthy.contains(runner_id),
            false => remote::live(&state, runner_id).is_some(),
        }
    }

    /// What a runner offers (empty if it never registered).
    pub(crate) fn offers(&self, runner_id: &str) -> Vec<SdkOffer> {
        self.state()
            .offers
            .get(runner_id)
            .cloned()
            .unwrap_or_default()
    }

    /// What every runner that ever registered offers, connected or not.
    pub(crate) fn all_offers(&self) -> Vec<Vec<SdkOffer>> {
        self.state().offers.values().cloned().collect()
    }

    /// Makes `outbox` the runner's channel, unless its current channel is
    /// still alive after [`HANDOVER`]: then [`Busy`].
    pub(crate) async fn connect(
        &self,
        runner_id: &str,
        outbox: Outbox,
        peer: Option<SocketAddr>,
    ) -> Result<Opened, Busy> {
        let deadline = Instant::now() + HANDOVER;
        loop {
            let live = {
                let mut state = self.state();
                match state.channels.get(runner_id) {
                    Some(c) if c.alive() => Live::of(c),
                    previous => {
                        if previous.is_some() {
                            tracing::info!(
                                runner = runner_id,
                                "runner reconnected; its previous channel had ended"
                            );
                        }
                        state.next_channel += 1;
                        let id = state.next_channel;
                        // A new channel starts healthy, heard now.
                        state.unhealthy.remove(runner_id);
                        state.heard.insert(runner_id.to_owned(), Instant::now());
                        let ended = CancellationToken::new();
                        let channel = Channel {
                            id,
                            outbox,
                            peer,
                            ended: ended.clone(),
                        };
                        state.channels.insert(runner_id.to_owned(), channel);
                        drop(state);
                        self.changed();
                        return Ok(Opened { id, ended });
                    }
                }
            };
            live.end_or(deadline).await?;
        }
    }

    /// Ok when the runner has no live channel, or its live channel came over
    /// the same connection as `peer` (the runner itself, registering again);
    /// else, after [`HANDOVER`], [`Busy`].
    pub(crate) async fn vacant(
        &self,
        runner_id: &str,
        peer: Option<SocketAddr>,
    ) -> Result<(), Busy> {
        let deadline = Instant::now() + HANDOVER;
        loop {
            let live = {
                let state = self.state();
                match state.channels.get(runner_id) {
                    Some(c) if c.alive() && (peer.is_none() || c.peer != peer) => Live::of(c),
                    _ => return Ok(()),
                }
            };
            live.end_or(deadline).await?;
        }
    }

    /// Forgets the runner's channel if it is still `channel`; whether it was.
    pub(crate) fn disconnect(&self, runner_id: &str, channel: u64) -> bool {
        let mut state = self.state();
        if state
            .channels
            .get(runner_id)
            .is_some_and(|c| c.id == channel)
            && let Some(channel) = state.channels.remove(runner_id)
        {
            drop(state);
            channel.ended.cancel();
            self.changed();
            return true;
        }
        false
    }

    /// The runner's channel, if it is connected.
    pub(crate) fn outbox(&self, runner_id: &str) -> Option<Outbox> {
        self.state()
            .channels
            .get(runner_id)
            .map(|c| c.outbox.clone())
    }

    /// Whether the runner has an open channel, here or on a live replica.
    pub(crate) fn is_connected(&self, runner_id: &str) -> bool {
        let state = self.state();
        state.channels.contains_key(runner_id) || remote::live(&state, runner_id).is_some()
    }

    /// Whether the runner's channel is open on this replica.
    pub(crate) fn is_here(&self, runner_id: &str) -> bool {
        self.state().channels.contains_key(runner_id)
    }

    /// Connected, healthy runners (here or on live replicas) and what
    /// they offer.
    pub(crate) fn connected(&self) -> Vec<(String, Vec<SdkOffer>)> {
        let state = self.state();
        let remote = state
            .remote
            .keys()
            .filter(|id| !state.channels.contains_key(*id) && remote::live(&state, id).is_some());
        state
            .channels
            .keys()
            .filter(|id| !state.unhealthy.contains(*id))
            .chain(remote)
            .map(|id| {
                (
                    id.clone(),
                    state.offers.get(id).cloned().unwrap_or_default(),
                )
            })
            .collect()
    }

    /// Runners connected here but unhealthy (they missed their heartbeats),
    /// and what they offer: why no runner may be there for new work.
    pub(crate) fn unhealthy(&self) -> Vec<(String, Vec<SdkOffer>)> {
        let state = self.state();
        let mut unhealthy: Vec<_> = state
            .channels
            .keys()
            .filter(|id| state.unhealthy.contains(*id))
            .map(|id| {
                (
                    id.clone(),
                    state.offers.get(id).cloned().unwrap_or_default(),
                )
            })
            .collect();
        unhealthy.sort_by(|a, b| a.0.cmp(&b.0));
        unhealthy
    }

    /// Runners whose channel is open here.
    pub(crate) fn here(&self) -> usize {
        self.state().channels.len()
    }

    /// Closes every channel (the runners see their stream end).
    pub(crate) fn close_all(&self) {
        for (_, channel) in self.state().channels.drain() {
            channel.ended.cancel();
        }
    }
}

/// A live channel seen under the lock, to wait on outside it.
struct Live {
    ended: CancellationToken,
    outbox: Outbox,
    peer: Option<SocketAddr>,
}

impl Live {
    fn of(channel: &Channel) -> Self {
        Self {
            ended: channel.ended.clone(),
            outbox: channel.outbox.clone(),
            peer: channel.peer,
        }
    }

    /// Returns once the channel ends (its reading stops, or its stream is
    /// dropped), or [`Busy`] at `deadline`.
    async fn end_or(self, deadline: Instant) -> Result<(), Busy> {
        tokio::select! {
            () = self.ended.cancelled() => Ok(()),
            () = self.outbox.closed() => Ok(()),
            () = tokio::time::sleep_until(deadline) => Err(Busy { peer: self.peer }),
        }
    }
}

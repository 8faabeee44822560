//! Runners whose channel is on another replica, as the runner leases say
//! (`crate::nats::lease`): which replica holds each, and whether that
//! replica is alive (its own lease renewed lately). A runner held by a
//! replica whose lease expired is gone: it is offline until it connects
//! again somewhere.

use gantry_runner_protocol::ProtocolVersion;
use tokio::time::Instant;

use super::{Registry, State};
use crate::offers::SdkOffer;

/// A runner's channel on another replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Remote {
    /// The replica holding it.
    pub replica: String,
    /// The version the runner registered with there.
    pub version: ProtocolVersion,
}

/// The runner's remote holder, if its replica is alive.
pub(super) fn live<'a>(state: &'a State, runner_id: &str) -> Option<&'a Remote> {
    let remote = state.remote.get(runner_id)?;
    let until = state.replicas.get(&remote.replica)?;
    (*until > Instant::now()).then_some(remote)
}

impl Registry {
    /// Another replica holds the runner's channel (`Some`), or no longer
    /// does (`None`); its offers come along.
    pub(crate) fn set_remote(&self, runner_id: &str, remote: Option<(Remote, Vec<SdkOffer>)>) {
        let mut state = self.state();
        match remote {
            Some((remote, offers)) => {
                state.offers.insert(runner_id.to_owned(), offers);
                state.remote.insert(runner_id.to_owned(), remote);
            }
            None => {
                state.remote.remove(runner_id);
            }
        }
        drop(state);
        self.changed();
    }

    /// The replica `replica` is alive until `until`.
    pub(crate) fn replica_alive(&self, replica: &str, until: Instant) {
        self.state().replicas.insert(replica.to_owned(), until);
    }

    /// The replica `replica` stopped (its lease was deleted).
    pub(crate) fn replica_gone(&self, replica: &str) {
        self.state().replicas.remove(replica);
        self.changed();
    }

    /// Forgets the runner's channel here without waiting for it to end:
    /// another replica holds a newer one (this one died unseen).
    pub(crate) fn drop_channel(&self, runner_id: &str) {
        if let Some(channel) = self.state().channels.remove(runner_id) {
            channel.ended.cancel();
            self.changed();
        }
    }

    /// The live replica holding the runner's channel, when it is not here.
    pub(crate) fn holder(&self, runner_id: &str) -> Option<Remote> {
        let state = self.state();
        if state.channels.contains_key(runner_id) {
            return None;
        }
        live(&state, runner_id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{Registry, Remote};

    #[tokio::test(start_paused = true)]
    async fn a_runner_of_a_replica_whose_lease_expired_is_gone() {
        let registry = Registry::default();
        let remote = Remote {
            replica: "b".into(),
            version: Default::default(),
        };
        registry.set_remote("r", Some((remote.clone(), Vec::new())));
        assert_eq!(registry.holder("r"), None, "replica b was never seen alive");
        registry.replica_alive("b", Instant::now() + Duration::from_secs(10));
        assert_eq!(registry.holder("r"), Some(remote));
        assert!(registry.is_connected("r") && registry.is_healthy("r"));
        assert_eq!(registry.connected().len(), 1);
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(registry.holder("r"), None, "b's lease ran out");
        assert!(!registry.is_connected("r"));
        assert!(registry.connected().is_empty());
        registry.replica_alive("b", Instant::now() + Duration::from_secs(10));
        registry.replica_gone("b");
        assert!(!registry.is_connected("r"), "b said goodbye");
    }
}

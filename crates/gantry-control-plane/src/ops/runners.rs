//! Listing runners.

use std::collections::HashMap;

use crate::ControlPlane;
use crate::error::ApiError;
use crate::views::RunnerView;

impl ControlPlane {
    /// Every runner, connected or not, with what it offers and its load.
    pub(crate) async fn runners(&self) -> Result<Vec<RunnerView>, ApiError> {
        let inner = &self.inner;
        let loads: HashMap<String, (i64, i64)> = inner
            .store
            .runner_loads()
            .await?
            .into_iter()
            .map(|l| (l.runner_id, (l.running_turns, l.agents)))
            .collect();
        let runners = inner.store.runners().await?;
        Ok(runners
            .into_iter()
            .map(|runner| {
                let connected = inner.registry.is_connected(&runner.id);
                let healthy = inner.registry.is_healthy(&runner.id);
                let pinned = runner.protocol.as_deref().and_then(|p| p.parse().ok());
                let protocol = inner.registry.version(&runner.id, pinned).to_string();
                let offers = inner.registry.offers(&runner.id);
                let load = loads.get(&runner.id).copied().unwrap_or_default();
                RunnerView::new(runner, (connected, healthy), protocol, offers, load)
            })
            .collect())
    }
}

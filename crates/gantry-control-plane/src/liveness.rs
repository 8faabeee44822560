//! Heartbeats of 0.7.0 runners: the control plane asks every
//! `heartbeat` interval over the channel, and a runner that has not
//! answered for [`MISSES`] intervals is marked unhealthy, which keeps new
//! work away from it (`Registry::connected`, `ControlPlane::ask`) until it
//! answers again. 0.2.0 has no heartbeat: such a runner's connection is
//! watched by HTTP/2 keepalive only.

use std::time::Duration;

use gantry_runner_protocol::messages::{Request, ServerMessage};
use tokio::sync::mpsc::error::TrySendError;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use crate::ControlPlane;
use crate::registry::{Outbox, Registry};

/// Intervals without an answer after which a runner is unhealthy.
pub(crate) const MISSES: u32 = 2;

/// Sends heartbeats to a runner until its channel `ended`.
pub(crate) async fn heartbeats(
    cp: ControlPlane,
    runner_id: String,
    outbox: Outbox,
    ended: CancellationToken,
) {
    let inner = &cp.inner;
    beat(
        inner.heartbeat,
        &inner.registry,
        &runner_id,
        &outbox,
        (&ended, &inner.stop),
    )
    .await;
}

/// Every `every`: marks the runner unhealthy once it has not answered for
/// [`MISSES`] intervals, then asks again, until `ended` or `stop`.
async fn beat(
    every: Duration,
    registry: &Registry,
    runner_id: &str,
    outbox: &Outbox,
    (ended, stop): (&CancellationToken, &CancellationToken),
) {
    let mut tick = tokio::time::interval_at(Instant::now() + every, every);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = ended.cancelled() => return,
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let late = registry
            .last_heard(runner_id)
            .is_none_or(|heard| heard.elapsed() > every * MISSES);
        if late && registry.mark_unhealthy(runner_id) {
            tracing::warn!(
                runner = %runner_id,
                "runner missed its heartbeats: unhealthy, it gets no new work until it answers"
            );
        }
        let heartbeat = ServerMessage {
            request_id: Some(format!("heartbeat-{}", uuid::Uuid::now_v7())),
            request: Request::Heartbeat,
        };
        // A runner that leaves its channel full is not answering either:
        // skip this beat rather than wait behind it.
        match outbox.try_send(heartbeat) {
            Ok(()) | Err(TrySendError::Full(_)) => {}
            Err(TrySendError::Closed(_)) => return,
        }
    }
}

#[cfg(test)]
mod tests;

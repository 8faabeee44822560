//! Liveness on tokio's paused clock: time moves only as the beats need it.

use std::sync::Arc;
use std::time::Duration;

use gantry_runner_protocol::messages::{Request, ServerMessage};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::beat;
use crate::choose::least_loaded;
use crate::offers::{ModelOffer, SdkOffer};
use crate::registry::Registry;

const EVERY: Duration = Duration::from_secs(10);

fn offer() -> Vec<SdkOffer> {
    vec![SdkOffer {
        status: None,
        error: None,
        name: "gantry".into(),
        models: vec![ModelOffer {
            name: "m".into(),
            reasoning: Vec::new(),
        }],
    }]
}

/// Whether new work can go to runner `r`: chosen for a new agent, and
/// let through to its channel (`ControlPlane::prepare` asks `is_healthy`).
fn gets_work(registry: &Registry) -> bool {
    let chosen = least_loaded(&registry.connected(), &[], "gantry", Some("m"));
    assert_eq!(chosen.is_some(), registry.is_healthy("r"));
    chosen.as_deref() == Some("r")
}

/// The next heartbeat the runner is sent (the paused clock jumps to it).
async fn next_beat(rx: &mut mpsc::Receiver<ServerMessage>) -> tokio::time::Instant {
    let message = rx.recv().await.expect("a heartbeat");
    assert_eq!(message.request, Request::Heartbeat);
    tokio::time::Instant::now()
}

#[tokio::test(start_paused = true)]
async fn a_runner_missing_two_heartbeats_gets_no_work_until_it_answers_again() {
    let registry = Arc::new(Registry::default());
    registry.set_offers("r", offer());
    let (tx, mut rx) = mpsc::channel(8);
    let opened = registry.connect("r", tx.clone(), None).await.unwrap();
    let start = tokio::time::Instant::now();
    let stop = CancellationToken::new();
    let beats = tokio::spawn({
        let (registry, ended, stop) = (registry.clone(), opened.ended.clone(), stop.clone());
        async move { beat(EVERY, &registry, "r", &tx, (&ended, &stop)).await }
    });
    assert!(gets_work(&registry));

    // Answered at once: healthy beat after beat.
    for n in 1..=3 {
        let at = next_beat(&mut rx).await;
        assert_eq!(at - start, EVERY * n);
        registry.heard("r");
        assert!(gets_work(&registry), "beat {n}");
    }

    // Silence: one interval missed is tolerated, two are not.
    next_beat(&mut rx).await;
    assert!(gets_work(&registry), "one missed heartbeat");
    next_beat(&mut rx).await;
    assert!(gets_work(&registry), "heard exactly two intervals ago");
    let at = next_beat(&mut rx).await;
    assert_eq!(at - start, EVERY * 6);
    assert!(!gets_work(&registry), "two intervals without an answer");
    assert!(registry.is_connected("r"), "unhealthy, not disconnected");
    // Still asked, so it can come back.
    next_beat(&mut rx).await;
    assert!(!gets_work(&registry));

    // It answers again: work goes to it from then on.
    registry.heard("r");
    assert!(gets_work(&registry));
    next_beat(&mut rx).await;
    assert!(gets_work(&registry));

    // Its channel ends: the beats stop.
    registry.disconnect("r", opened.id);
    beats.await.unwrap();
    assert!(rx.recv().await.is_none(), "no beat after the channel ended");
}

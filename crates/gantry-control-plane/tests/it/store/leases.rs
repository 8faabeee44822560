//! Runner leases: which replica holds a runner's channel, until when. A
//! lease is taken when free, expired or already the taker's; it shows only
//! while it has not expired; its holder renews and releases it. Expiry is
//! the database's clock: a zero TTL is a lease already expired.

use std::time::Duration;

use crate::support::{StoreAt, on_both_backends};

/// Long enough never to expire during a test.
const LONG: Duration = Duration::from_secs(3600);

on_both_backends!(
    a_lease_is_held_by_one_replica_until_released,
    an_expired_lease_shows_no_holder_and_is_taken_by_another_replica,
    renewing_extends_only_the_replicas_own_leases,
);

async fn a_lease_is_held_by_one_replica_until_released(at: StoreAt) {
    let store = at.open().await;
    assert_eq!(store.runner_lease_holder("r1").await.unwrap(), None);
    assert!(store.claim_runner_lease("r1", "a", LONG).await.unwrap());
    // Claiming again is the holder's renewal, not a conflict.
    assert!(store.claim_runner_lease("r1", "a", LONG).await.unwrap());
    assert!(!store.claim_runner_lease("r1", "b", LONG).await.unwrap());
    assert_eq!(
        store.runner_lease_holder("r1").await.unwrap().as_deref(),
        Some("a")
    );

    // Only the holder releases it.
    store.release_runner_lease("r1", "b").await.unwrap();
    assert_eq!(
        store.runner_lease_holder("r1").await.unwrap().as_deref(),
        Some("a")
    );
    store.release_runner_lease("r1", "a").await.unwrap();
    assert_eq!(store.runner_lease_holder("r1").await.unwrap(), None);
    assert!(store.claim_runner_lease("r1", "b", LONG).await.unwrap());

    // Another process (a restarted replica) sees it.
    store.close().await;
    let store = at.open().await;
    assert_eq!(
        store.runner_lease_holder("r1").await.unwrap().as_deref(),
        Some("b")
    );
}

async fn an_expired_lease_shows_no_holder_and_is_taken_by_another_replica(at: StoreAt) {
    let store = at.open().await;
    // Replica a's lease ends as it is taken, as one whose replica died.
    assert!(
        store
            .claim_runner_lease("r1", "a", Duration::ZERO)
            .await
            .unwrap()
    );
    assert_eq!(store.runner_lease_holder("r1").await.unwrap(), None);
    assert!(store.claim_runner_lease("r1", "b", LONG).await.unwrap());
    assert_eq!(
        store.runner_lease_holder("r1").await.unwrap().as_deref(),
        Some("b")
    );
    // The dead replica, back, neither renews nor releases b's lease.
    store.renew_leases("a", LONG).await.unwrap();
    store.release_runner_lease("r1", "a").await.unwrap();
    assert!(!store.claim_runner_lease("r1", "a", LONG).await.unwrap());
    assert_eq!(
        store.runner_lease_holder("r1").await.unwrap().as_deref(),
        Some("b")
    );
}

async fn renewing_extends_only_the_replicas_own_leases(at: StoreAt) {
    let store = at.open().await;
    for runner in ["r1", "r2"] {
        assert!(
            store
                .claim_runner_lease(runner, "a", Duration::ZERO)
                .await
                .unwrap()
        );
    }
    assert!(
        store
            .claim_runner_lease("r3", "b", Duration::ZERO)
            .await
            .unwrap()
    );
    assert_eq!(store.runner_lease_holder("r1").await.unwrap(), None);

    // a's leases come back to life with a renewal; b's stays expired.
    store.renew_leases("a", LONG).await.unwrap();
    for runner in ["r1", "r2"] {
        assert_eq!(
            store.runner_lease_holder(runner).await.unwrap().as_deref(),
            Some("a")
        );
    }
    assert_eq!(store.runner_lease_holder("r3").await.unwrap(), None);

    // And expire again when renewed with none left.
    store.renew_leases("a", Duration::ZERO).await.unwrap();
    assert_eq!(store.runner_lease_holder("r2").await.unwrap(), None);
    assert!(store.claim_runner_lease("r2", "b", LONG).await.unwrap());
}

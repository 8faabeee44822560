//! Compacting a store: every row kept, the sizes before and after told,
//! and commits carry on after it.

use gantry_store::{Commit, CompactRequest, Store};
use gantry_types::ThreadStatus;

use super::fixtures::{archived_event, thread, thread_id};

/// Thread 1 is deleted, the store compacted three ways; thread 2 reads
/// back the same each time and takes the next cursor after.
pub(crate) async fn compact_keeps_everything(store: &dyn Store) {
    let (gone, kept) = (thread_id(1), thread_id(2));
    for id in [&gone, &kept] {
        let commit = Commit {
            events: (1..=50).map(|seq| archived_event(id, seq)).collect(),
            threads: vec![thread(id, ThreadStatus::Idle, true)],
        };
        store.commit(&commit).await.unwrap();
    }
    assert!(store.delete_thread(&gone).await.unwrap());
    let kept_events = store.events(&kept, 1).await.unwrap();
    let requests = [
        CompactRequest::default(),
        CompactRequest {
            incremental: true,
            ..CompactRequest::default()
        },
        CompactRequest {
            enable_auto_vacuum: true,
            ..CompactRequest::default()
        },
    ];
    for request in requests {
        let done = store.compact(request).await.unwrap();
        assert_eq!(
            done.freed(),
            done.size_before as i64 - done.size_after as i64,
            "{request:?}"
        );
        assert_eq!(store.events(&kept, 1).await.unwrap(), kept_events);
        assert_eq!(store.thread(&gone).await.unwrap(), None);
    }
    let next = Commit {
        events: vec![archived_event(&kept, 51)],
        threads: vec![thread(&kept, ThreadStatus::Idle, true)],
    };
    assert_eq!(store.commit(&next).await.unwrap(), 101);
}

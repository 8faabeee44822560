//! Deleting a thread: its events, row and memories go, nothing of another
//! thread does, and the cursors its events had are never given again.

use gantry_store::{Commit, MemorySearch, Store, ThreadQuery};
use gantry_types::ThreadStatus;
use gantry_types::memory::{MemoryScope, MemoryStats};

use super::fixtures::{archived_event, thread, thread_id, without_cursors};
use super::memories::seed;

/// Thread 1 is deleted; thread 2 is left as it was.
pub(crate) async fn thread_delete(store: &dyn Store) {
    let (gone, kept) = (thread_id(1), thread_id(2));
    // Thread 2 first, so the deleted thread holds the newest cursors.
    for id in [&kept, &gone] {
        let events = (1..=3).map(|seq| archived_event(id, seq)).collect();
        let commit = Commit {
            events,
            threads: vec![thread(id, ThreadStatus::Idle, true)],
        };
        store.commit(&commit).await.unwrap();
    }
    // Memories: ten of thread 1, one of thread 2, one of an agent.
    seed(store).await;
    let kept_events = store.events(&kept, 1).await.unwrap();

    assert!(store.delete_thread(&gone).await.unwrap());

    assert!(store.events(&gone, 1).await.unwrap().is_empty());
    assert_eq!(store.thread(&gone).await.unwrap(), None);
    let listed = store.list_threads(&ThreadQuery::default()).await.unwrap();
    assert_eq!(
        listed.threads.iter().map(|t| &t.id).collect::<Vec<_>>(),
        [&kept]
    );
    assert_eq!(store.events_after(0, 100).await.unwrap(), kept_events);
    assert_eq!(
        store
            .memory_stats(&[MemoryScope::Thread(gone.clone())])
            .await
            .unwrap(),
        MemoryStats::default()
    );
    let search = MemorySearch {
        scopes: vec![MemoryScope::Thread(gone.clone())],
        text: Some("cargo".to_owned()),
        limit: 10,
        ..MemorySearch::default()
    };
    assert_eq!(store.search_memories(&search).await.unwrap().total_count, 0);
    let other = store
        .memory_stats(&[MemoryScope::Thread(kept.clone())])
        .await
        .unwrap();
    assert_eq!(other.long_term_count, 1, "thread 2's memory stays");
    assert_eq!(store.events(&kept, 1).await.unwrap(), kept_events);

    // The deleted events had cursors 4 to 6: the next commit gets 7.
    assert_eq!(store.last_cursor().await.unwrap(), 6);
    let next = archived_event(&kept, 4);
    let end = store
        .commit(&Commit {
            events: vec![next.clone()],
            threads: vec![],
        })
        .await
        .unwrap();
    assert_eq!(end, 7);
    let after = store.events_after(3, 100).await.unwrap();
    assert_eq!(without_cursors(after), vec![next]);

    // A second delete finds nothing; a thread never stored neither.
    assert!(!store.delete_thread(&gone).await.unwrap());
    assert!(!store.delete_thread(&thread_id(9)).await.unwrap());
}

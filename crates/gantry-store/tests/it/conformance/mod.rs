//! The conformance suite: every `Store` implementation must pass each case.
//! Each case takes a fresh, empty store.

pub(crate) mod compact;
pub(crate) mod delete;
pub(crate) mod fixtures;
pub(crate) mod jobs;
pub(crate) mod memories;

pub(crate) use compact::compact_keeps_everything;
pub(crate) use delete::thread_delete;
pub(crate) use jobs::{execution_needs_its_job, job_history, job_names_unique, jobs_crud};
pub(crate) use memories::{
    memory_delete_one, memory_empty, memory_put_and_touch, memory_query_text_is_words,
    memory_replace, memory_search_filters, memory_search_ranking, memory_stats_and_clear,
};

use gantry_store::{Commit, Store, StoreError, ThreadQuery};
use gantry_types::{Agent, AgentId, ProviderConfig, ProviderKind, ThreadId, ThreadStatus};

use fixtures::{all_kinds_log, archived_event, thread, thread_id, without_cursors};

/// Generates one `#[tokio::test]` per case; `$fixture().await` returns
/// `Some((store, guard))`, the guard kept alive for the test (e.g. a
/// tempdir), or `None` when its backend is skipped (PostgreSQL, only when
/// told to: see `pg_support`).
#[macro_export]
macro_rules! conformance_tests {
    ($fixture:path) => {
        $crate::conformance_tests!(@cases $fixture;
            round_trip, from_seq, events_after_pages, duplicate_rejected,
            duplicate_within_commit_rejected, upsert_replaces, listing_pages,
            archived_filter, bad_cursor, running_threads, empty_store,
            providers_crud, settings_crud, agents_crud, large_commits,
            concurrent_commits,
            jobs_crud, job_names_unique, job_history, execution_needs_its_job,
            memory_put_and_touch, memory_replace, memory_search_ranking,
            memory_search_filters, memory_stats_and_clear, memory_query_text_is_words,
            memory_empty, memory_delete_one, thread_delete, compact_keeps_everything);
    };
    (@cases $fixture:path; $($case:ident),*) => {
        $(
            #[tokio::test]
            async fn $case() {
                let Some(fixture) = $fixture().await else {
                    return;
                };
                $crate::conformance::$case(&fixture.0).await;
            }
        )*
    };
}

/// Events and thread come back exactly as committed, every payload kind.
pub(crate) async fn round_trip(store: &dyn Store) {
    let id = thread_id(1);
    let events = all_kinds_log(&id);
    let t = thread(&id, ThreadStatus::Idle, false);
    store
        .commit(&Commit {
            events: events.clone(),
            threads: vec![t.clone()],
        })
        .await
        .unwrap();
    // The store gives each event its commit cursor, in order, from 1.
    let events: Vec<_> = events
        .into_iter()
        .zip(1..)
        .map(|(mut e, cursor)| {
            e.cursor = cursor;
            e
        })
        .collect();
    assert_eq!(store.events(&id, 0).await.unwrap(), events);
    assert_eq!(store.events_after(0, 1000).await.unwrap(), events);
    assert_eq!(store.last_cursor().await.unwrap(), events.len() as u64);
    assert_eq!(store.thread(&id).await.unwrap(), Some(t));
    assert_eq!(store.thread(&thread_id(2)).await.unwrap(), None);
    assert!(store.events(&thread_id(2), 0).await.unwrap().is_empty());
}

/// `from_seq` is inclusive and filters per thread and across threads.
pub(crate) async fn from_seq(store: &dyn Store) {
    let (a, b) = (thread_id(1), thread_id(2));
    let mut events: Vec<_> = (1..=5).map(|s| archived_event(&a, s)).collect();
    events.extend((1..=3).map(|s| archived_event(&b, s)));
    store
        .commit(&Commit {
            events,
            threads: vec![],
        })
        .await
        .unwrap();
    // A second commit appends after the first.
    let more = vec![archived_event(&a, 6)];
    store
        .commit(&Commit {
            events: more,
            threads: vec![],
        })
        .await
        .unwrap();

    let seqs = |v: Vec<gantry_types::Event>| v.iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(seqs(store.events(&a, 0).await.unwrap()), [1, 2, 3, 4, 5, 6]);
    assert_eq!(seqs(store.events(&a, 4).await.unwrap()), [4, 5, 6]);
    assert_eq!(seqs(store.events(&a, 7).await.unwrap()), Vec::<u64>::new());
    assert_eq!(
        seqs(store.events(&a, u64::MAX).await.unwrap()),
        Vec::<u64>::new()
    );
    // Cursors follow commit order: a's five, b's three, then a's sixth.
    assert_eq!(
        seqs(store.events_after(3, 100).await.unwrap()),
        [4, 5, 1, 2, 3, 6]
    );
}

/// `events_after` pages through every thread in commit order, whatever
/// the threads' ids.
pub(crate) async fn events_after_pages(store: &dyn Store) {
    let (a, b) = (thread_id(1), thread_id(2));
    let events = vec![
        archived_event(&b, 2),
        archived_event(&a, 1),
        archived_event(&b, 1),
    ];
    store
        .commit(&Commit {
            events,
            threads: vec![],
        })
        .await
        .unwrap();
    let page = |after, limit| async move {
        store
            .events_after(after, limit)
            .await
            .unwrap()
            .into_iter()
            .map(|e| (e.cursor, e.thread_id, e.seq))
            .collect::<Vec<_>>()
    };
    assert_eq!(page(0, 2).await, [(1, b.clone(), 2), (2, a.clone(), 1)]);
    assert_eq!(page(2, 2).await, [(3, b, 1)]);
    assert!(page(3, 2).await.is_empty());
    assert_eq!(store.last_cursor().await.unwrap(), 3);
}

/// A commit with a stored `(thread, seq)` fails whole: no event, no thread row.
pub(crate) async fn duplicate_rejected(store: &dyn Store) {
    let (a, b) = (thread_id(1), thread_id(2));
    let first = Commit {
        events: vec![archived_event(&a, 1)],
        threads: vec![thread(&a, ThreadStatus::Idle, false)],
    };
    store.commit(&first).await.unwrap();

    let bad = Commit {
        events: vec![
            archived_event(&b, 1),
            archived_event(&a, 2),
            archived_event(&a, 1),
        ],
        threads: vec![
            thread(&a, ThreadStatus::Running, false),
            thread(&b, ThreadStatus::Idle, false),
        ],
    };
    let err = store.commit(&bad).await.unwrap_err();
    assert!(matches!(err, StoreError::Database(_)), "{err:?}");

    assert_eq!(
        without_cursors(store.events(&a, 0).await.unwrap()),
        first.events
    );
    assert!(store.events(&b, 0).await.unwrap().is_empty());
    assert_eq!(
        store.thread(&a).await.unwrap(),
        Some(first.threads[0].clone())
    );
    assert_eq!(store.thread(&b).await.unwrap(), None);
    // The store still works after the failed commit.
    let next = Commit {
        events: vec![archived_event(&a, 2)],
        threads: vec![],
    };
    // ...and the failed commit took no cursor: they stay dense.
    assert_eq!(store.commit(&next).await.unwrap(), 2);
    let stored = store.events(&a, 2).await.unwrap();
    assert_eq!(stored.iter().map(|e| e.cursor).collect::<Vec<_>>(), [2]);
    assert_eq!(without_cursors(stored), next.events);
}

/// Two events with the same `(thread, seq)` in one commit also fail it whole.
pub(crate) async fn duplicate_within_commit_rejected(store: &dyn Store) {
    let a = thread_id(1);
    let bad = Commit {
        events: vec![archived_event(&a, 1), archived_event(&a, 1)],
        threads: vec![thread(&a, ThreadStatus::Idle, false)],
    };
    assert!(matches!(
        store.commit(&bad).await,
        Err(StoreError::Database(_))
    ));
    assert!(store.events_after(0, 10).await.unwrap().is_empty());
    assert_eq!(store.last_cursor().await.unwrap(), 0);
    assert_eq!(store.thread(&a).await.unwrap(), None);
}

/// A thread row is replaced by later commits; within one commit the last wins.
pub(crate) async fn upsert_replaces(store: &dyn Store) {
    let a = thread_id(1);
    let idle = thread(&a, ThreadStatus::Idle, false);
    let mut running = thread(&a, ThreadStatus::Running, false);
    running.last_seq = 9;
    running.name = None;
    store
        .commit(&Commit {
            events: vec![],
            threads: vec![idle.clone()],
        })
        .await
        .unwrap();
    assert_eq!(store.thread(&a).await.unwrap(), Some(idle.clone()));
    store
        .commit(&Commit {
            events: vec![],
            threads: vec![idle, running.clone()],
        })
        .await
        .unwrap();
    assert_eq!(store.thread(&a).await.unwrap(), Some(running));
    assert_eq!(store.running_threads().await.unwrap(), [a]);
}

async fn seed_threads(store: &dyn Store, n: u32, archived: impl Fn(u32) -> bool) -> Vec<ThreadId> {
    let threads = (1..=n)
        .map(|i| thread(&thread_id(i), ThreadStatus::Idle, archived(i)))
        .collect();
    store
        .commit(&Commit {
            events: vec![],
            threads,
        })
        .await
        .unwrap();
    (1..=n).rev().map(thread_id).collect()
}

async fn page_ids(store: &dyn Store, query: &ThreadQuery) -> (Vec<ThreadId>, Option<String>) {
    let page = store.list_threads(query).await.unwrap();
    (
        page.threads.into_iter().map(|t| t.id).collect(),
        page.next_cursor,
    )
}

/// 7 threads, limit 3: pages of 3, 3 and 1, newest first, no cursor at the end.
pub(crate) async fn listing_pages(store: &dyn Store) {
    let newest_first = seed_threads(store, 7, |_| false).await;
    let mut query = ThreadQuery {
        archived: None,
        limit: 3,
        cursor: None,
    };

    let (ids, cursor) = page_ids(store, &query).await;
    assert_eq!(ids, newest_first[0..3]);
    query.cursor = Some(cursor.expect("second page"));
    let (ids, cursor) = page_ids(store, &query).await;
    assert_eq!(ids, newest_first[3..6]);
    query.cursor = Some(cursor.expect("third page"));
    let (ids, cursor) = page_ids(store, &query).await;
    assert_eq!(ids, newest_first[6..7]);
    assert_eq!(cursor, None);

    // Exactly `limit` rows left: still no next cursor.
    let (ids, cursor) = page_ids(
        store,
        &ThreadQuery {
            limit: 7,
            ..ThreadQuery::default()
        },
    )
    .await;
    assert_eq!(ids, newest_first);
    assert_eq!(cursor, None);
    // 0 means the default page size.
    let (ids, _) = page_ids(store, &ThreadQuery::default()).await;
    assert_eq!(ids.len(), 7);
}

/// The archived filter, alone and combined with a cursor.
pub(crate) async fn archived_filter(store: &dyn Store) {
    // Threads 2, 4, 6 archived.
    seed_threads(store, 7, |i| i % 2 == 0).await;
    let archived = |a: Option<bool>, limit, cursor| ThreadQuery {
        archived: a,
        limit,
        cursor,
    };

    let (ids, _) = page_ids(store, &archived(Some(true), 0, None)).await;
    assert_eq!(ids, [6, 4, 2].map(thread_id));
    let (ids, _) = page_ids(store, &archived(Some(false), 0, None)).await;
    assert_eq!(ids, [7, 5, 3, 1].map(thread_id));
    let (ids, _) = page_ids(store, &archived(None, 0, None)).await;
    assert_eq!(ids.len(), 7);

    let (ids, cursor) = page_ids(store, &archived(Some(false), 3, None)).await;
    assert_eq!(ids, [7, 5, 3].map(thread_id));
    let (ids, cursor) = page_ids(store, &archived(Some(false), 3, cursor)).await;
    assert_eq!(ids, [thread_id(1)]);
    assert_eq!(cursor, None);

    let (ids, cursor) = page_ids(store, &archived(Some(true), 2, None)).await;
    assert_eq!(ids, [6, 4].map(thread_id));
    let (ids, cursor) = page_ids(store, &archived(Some(true), 2, cursor)).await;
    assert_eq!(ids, [thread_id(2)]);
    assert_eq!(cursor, None);
}

/// Garbage cursors are rejected as such, not treated as "no results".
pub(crate) async fn bad_cursor(store: &dyn Store) {
    seed_threads(store, 2, |_| false).await;
    for garbage in ["", "not a cursor", "x' OR 1=1 --", "\u{0}"] {
        for archived in [None, Some(true)] {
            let query = ThreadQuery {
                archived,
                limit: 3,
                cursor: Some(garbage.into()),
            };
            match store.list_threads(&query).await {
                Err(StoreError::BadCursor(c)) => assert_eq!(c, garbage),
                other => panic!("cursor {garbage:?}: {other:?}"),
            }
        }
    }
}

/// Only threads whose latest stored status is running are reported.
pub(crate) async fn running_threads(store: &dyn Store) {
    let statuses = [
        ThreadStatus::Running,
        ThreadStatus::Idle,
        ThreadStatus::Running,
        ThreadStatus::Idle,
        ThreadStatus::Failed,
    ];
    let threads = (1..)
        .zip(statuses)
        .map(|(i, s)| thread(&thread_id(i), s, i == 3))
        .collect();
    store
        .commit(&Commit {
            events: vec![],
            threads,
        })
        .await
        .unwrap();
    let mut running = store.running_threads().await.unwrap();
    running.sort();
    assert_eq!(running, [thread_id(1), thread_id(3)]);

    // Thread 1 goes idle: no longer to recover.
    let idle = thread(&thread_id(1), ThreadStatus::Idle, false);
    store
        .commit(&Commit {
            events: vec![],
            threads: vec![idle],
        })
        .await
        .unwrap();
    assert_eq!(store.running_threads().await.unwrap(), [thread_id(3)]);
}

/// An empty store answers every read with nothing; an empty commit is fine.
pub(crate) async fn empty_store(store: &dyn Store) {
    store.commit(&Commit::default()).await.unwrap();
    assert!(store.events_after(0, 10).await.unwrap().is_empty());
    assert_eq!(store.last_cursor().await.unwrap(), 0);
    assert!(store.running_threads().await.unwrap().is_empty());
    let page = store.list_threads(&ThreadQuery::default()).await.unwrap();
    assert!(page.threads.is_empty());
    assert_eq!(page.next_cursor, None);
}

fn provider(name: &str, kind: ProviderKind) -> ProviderConfig {
    let mut p = ProviderConfig::new(name, kind);
    p.api_key_env = Some("SOME_KEY_VAR".into());
    p.headers.insert("x-team".into(), "gantry".into());
    p.models = vec!["m1".into(), "m2".into()];
    p
}

/// Providers: stored exactly, listed by name, replaced by name, deleted once.
pub(crate) async fn providers_crud(store: &dyn Store) {
    assert!(store.providers().await.unwrap().is_empty());
    let b = provider("b", ProviderKind::Anthropic);
    let mut a = provider("a", ProviderKind::OpenaiChat);
    a.base_url = Some("http://127.0.0.1:1/v1".into());
    a.api_key = Some("sk-literal-0123456789".into());
    store.put_provider(&b).await.unwrap();
    store.put_provider(&a).await.unwrap();
    assert_eq!(store.providers().await.unwrap(), vec![a.clone(), b.clone()]);

    let mut a2 = a.clone();
    a2.kind = ProviderKind::OpenaiResponses;
    a2.api_key = None;
    store.put_provider(&a2).await.unwrap();
    assert_eq!(store.providers().await.unwrap(), vec![a2, b.clone()]);

    assert!(store.delete_provider("a").await.unwrap());
    assert!(!store.delete_provider("a").await.unwrap());
    assert!(!store.delete_provider("nope").await.unwrap());
    assert_eq!(store.providers().await.unwrap(), vec![b]);
}

/// Settings: absent until set, then the last value wins.
pub(crate) async fn settings_crud(store: &dyn Store) {
    assert_eq!(store.setting("default_model").await.unwrap(), None);
    store.put_setting("default_model", "a/m1").await.unwrap();
    store.put_setting("other", "x").await.unwrap();
    store.put_setting("default_model", "b/m2").await.unwrap();
    assert_eq!(
        store.setting("default_model").await.unwrap().as_deref(),
        Some("b/m2")
    );
    assert_eq!(store.setting("other").await.unwrap().as_deref(), Some("x"));
}

/// Agents are replaced by id, listed by id, deleted once.
pub(crate) async fn agents_crud(store: &dyn Store) {
    let agent = |id: &str, model: &str| Agent {
        id: AgentId::from(id),
        name: format!("agent {id}"),
        sdk: "gantry".into(),
        model: Some(model.into()),
        reasoning: Some("high".into()),
        instructions: None,
        created_at: 1,
        updated_at: 2,
    };
    assert!(store.agents().await.unwrap().is_empty());
    store.put_agent(&agent("b", "m1")).await.unwrap();
    store.put_agent(&agent("a", "m1")).await.unwrap();
    store.put_agent(&agent("b", "m2")).await.unwrap();
    let agents = store.agents().await.unwrap();
    assert_eq!(agents, vec![agent("a", "m1"), agent("b", "m2")]);
    assert_eq!(
        store.agent(&AgentId::from("b")).await.unwrap(),
        Some(agent("b", "m2"))
    );
    assert_eq!(store.agent(&AgentId::from("zz")).await.unwrap(), None);
    assert!(store.delete_agent(&AgentId::from("a")).await.unwrap());
    assert!(!store.delete_agent(&AgentId::from("a")).await.unwrap());
    assert_eq!(store.agents().await.unwrap(), vec![agent("b", "m2")]);
}

/// Commits larger than one multi-row insert (255 = 128 + 64 + ... + 1
/// rows, then 345) come back whole and in order.
pub(crate) async fn large_commits(store: &dyn Store) {
    let id = thread_id(1);
    let events: Vec<_> = (1..=255).map(|s| archived_event(&id, s)).collect();
    let more: Vec<_> = (256..=600).map(|s| archived_event(&id, s)).collect();
    for batch in [&events, &more] {
        store
            .commit(&Commit {
                events: batch.clone(),
                threads: vec![],
            })
            .await
            .unwrap();
    }
    let got = without_cursors(store.events(&id, 0).await.unwrap());
    assert_eq!(got.len(), 600);
    assert_eq!(got[..255], events[..]);
    assert_eq!(got[255..], more[..]);
    assert_eq!(store.last_cursor().await.unwrap(), 600);
}

/// Four writers commit and read side by side: cursors stay dense and in
/// commit order, and every reader sees a prefix of the log.
pub(crate) async fn concurrent_commits(store: &dyn Store) {
    let writer = |t: u32| async move {
        let id = thread_id(t);
        for batch in 0..10u64 {
            let events = (1..=20)
                .map(|s| archived_event(&id, batch * 20 + s))
                .collect();
            let threads = vec![thread(&id, ThreadStatus::Running, false)];
            store.commit(&Commit { events, threads }).await.unwrap();
            let seen = store.events_after(0, 10_000).await.unwrap();
            let cursors: Vec<u64> = seen.iter().map(|e| e.cursor).collect();
            assert_eq!(cursors, (1..=cursors.len() as u64).collect::<Vec<_>>());
        }
    };
    tokio::join!(writer(1), writer(2), writer(3), writer(4));
    let all = store.events_after(0, 10_000).await.unwrap();
    let cursors: Vec<u64> = all.iter().map(|e| e.cursor).collect();
    assert_eq!(
        cursors,
        (1..=800).collect::<Vec<_>>(),
        "dense, in commit order"
    );
    assert_eq!(store.running_threads().await.unwrap().len(), 4);
}

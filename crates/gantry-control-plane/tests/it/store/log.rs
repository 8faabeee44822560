//! Every thread's log in commit order, what `GET /v1/events` reads: pages
//! after a cursor, on both backends; and on PostgreSQL, where replicas
//! commit at once, an entry committed behind a transaction still running
//! waits for it rather than being read before it. (Any database's running
//! transactions hold entries back, other tests' included: reads that
//! expect everything wait until nothing is held back.)

use std::time::Duration;

use gantry_control_plane::store::{
    ControlPlaneStore, LogCursor, LogPage, ThreadChange, Upsert, Write,
};

use super::change;
use crate::support::{Backend, StoreAt, guarded, on_both_backends};

on_both_backends!(every_threads_log_is_read_in_commit_order_and_resumed_after_a_cursor);

/// An entry of `thread` that writes no row.
fn entry(thread: &str) -> ThreadChange {
    change(thread, Upsert::Nothing, "error")
}

/// (thread, seq) of each entry of a page.
fn entries(page: &LogPage) -> Vec<(String, i64)> {
    page.updates
        .iter()
        .map(|u| (u.update.thread_id.clone(), u.update.seq))
        .collect()
}

/// A page after `after` once no entry is held back.
async fn settled(store: &dyn ControlPlaneStore, after: LogCursor, limit: i64) -> LogPage {
    guarded("entries held back to be readable", async {
        loop {
            let page = store.log_after(after, limit).await.unwrap();
            if !page.held_back {
                return page;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

fn pairs(list: &[(&str, i64)]) -> Vec<(String, i64)> {
    list.iter().map(|(t, s)| ((*t).to_owned(), *s)).collect()
}

async fn every_threads_log_is_read_in_commit_order_and_resumed_after_a_cursor(at: StoreAt) {
    let store = at.open().await;
    let start = store.log_head().await.unwrap();
    assert_eq!(settled(store.as_ref(), start, 10).await, LogPage::default());

    store.apply(&entry("a")).await.unwrap();
    store.apply(&entry("b")).await.unwrap();
    store.apply(&entry("a")).await.unwrap();
    let batch = [
        Write::Change {
            seq: 2,
            change: entry("b"),
        },
        Write::Change {
            seq: 3,
            change: entry("a"),
        },
    ];
    store.write(&batch).await.unwrap();

    let all = settled(store.as_ref(), start, 10).await;
    let order = pairs(&[("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3)]);
    assert_eq!(entries(&all), order);
    assert!(!all.held_back);
    let cursors: Vec<LogCursor> = all.updates.iter().map(|u| u.cursor).collect();
    assert!(cursors.windows(2).all(|w| w[0] < w[1]), "{cursors:?}");
    for cursor in &cursors {
        assert_eq!(LogCursor::parse(&cursor.to_string()), Some(*cursor));
    }

    // Page by page, and resumed after any cursor: the rest, nothing twice.
    let first = settled(store.as_ref(), start, 2).await;
    assert_eq!(entries(&first), order[..2]);
    let rest = settled(store.as_ref(), cursors[1], 10).await;
    assert_eq!(entries(&rest), order[2..]);

    // From the end now on: what comes next (on PostgreSQL perhaps also
    // entries committed just before, behind another database's running
    // transaction: never fewer), and after a reopen the cursors are the same.
    let head = store.log_head().await.unwrap();
    store.apply(&entry("c")).await.unwrap();
    store.close().await;
    let store = at.open().await;
    let next = entries(&settled(store.as_ref(), head, 10).await);
    assert_eq!(next.last(), pairs(&[("c", 1)]).last());
    if at.backend == Backend::Sqlite {
        assert_eq!(next.len(), 1, "{next:?}");
    }
    let again = settled(store.as_ref(), start, 10).await;
    assert_eq!(again.updates[..5], all.updates[..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_an_entry_committed_behind_a_running_transaction_waits_for_it() {
    let Some(at) = StoreAt::new(Backend::Postgres).await else {
        return;
    };
    let store = at.open().await;
    let url = at.postgres_url().unwrap();
    let pool = sqlx::PgPool::connect(&url).await.unwrap();

    // Another replica's transaction writes first and commits last.
    let mut early = pool.begin().await.unwrap();
    sqlx::query(
        "INSERT INTO thread_updates (thread_id, seq, ts, kind, data) \
         VALUES ('early', 1, 1, 'error', '{}')",
    )
    .execute(&mut *early)
    .await
    .unwrap();
    store.apply(&entry("late")).await.unwrap();

    // Reading "late" now would skip "early" for good: it is held back.
    let page = store.log_after(LogCursor::default(), 10).await.unwrap();
    assert!(page.updates.is_empty(), "{page:?}");
    assert!(page.held_back);

    early.commit().await.unwrap();
    let page = settled(store.as_ref(), LogCursor::default(), 10).await;
    assert_eq!(entries(&page), pairs(&[("early", 1), ("late", 1)]));
    assert!(!page.held_back);
    pool.close().await;
    store.close().await;
}

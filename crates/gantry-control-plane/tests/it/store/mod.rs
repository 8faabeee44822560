//! The control plane's store, on SQLite and on PostgreSQL: every case runs
//! on both backends (`sqlite` and `postgres` tests of its module), through
//! the `ControlPlaneStore` trait, reopening the store where a restart
//! matters.

use std::sync::Arc;

use gantry_control_plane::store::{
    AgentRecord, ApiTokenRecord, ControlPlaneStore, RequestRecord, RunnerLoad, RunnerRecord,
    ThreadChange, ThreadRecord, TurnRecord, Upsert, Write,
};

use crate::support::{StoreAt, on_both_backends};

mod log;

on_both_backends!(
    each_thread_change_gets_the_next_dense_seq_and_survives_a_reopen,
    a_request_is_linked_to_its_thread_and_turn_once,
    load_counts_running_turns_and_live_agents,
    a_runner_name_is_taken_once,
    api_tokens_are_added_listed_by_age_and_revoked_by_name,
    a_batch_is_written_whole_in_order_or_not_at_all,
);

pub(crate) fn runner(id: &str, name: &str) -> RunnerRecord {
    RunnerRecord {
        id: id.into(),
        name: name.into(),
        token_hash: format!("hash-{id}"),
        sdks: "[]".into(),
        created_at: 1,
        registered_at: None,
        protocol: None,
    }
}

pub(crate) fn agent(id: &str, runner_id: &str) -> AgentRecord {
    AgentRecord {
        id: id.into(),
        runner_id: runner_id.into(),
        sdk: "gantry".into(),
        model: None,
        status: "ready".into(),
        created_at: 2,
        updated_at: 2,
    }
}

pub(crate) fn thread(id: &str, agent_id: &str, runner_id: &str) -> ThreadRecord {
    ThreadRecord {
        id: id.into(),
        agent_id: agent_id.into(),
        runner_id: runner_id.into(),
        model: "m".into(),
        reasoning_level: None,
        status: "ready".into(),
        created_at: 3,
        updated_at: 3,
        name: None,
        token_usage: None,
        mcp_servers: None,
    }
}

pub(crate) fn change(thread_id: &str, upsert: Upsert, kind: &str) -> ThreadChange {
    ThreadChange {
        thread_id: thread_id.into(),
        ts: 10,
        upsert,
        kind: kind.into(),
        data: format!("{{\"kind\":\"{kind}\"}}"),
    }
}

pub(crate) fn turn(status: &str, request_id: &str) -> TurnRecord {
    TurnRecord {
        thread_id: "t1".into(),
        id: "turn-1".into(),
        request_id: request_id.into(),
        status: status.into(),
        first_seq: 0,
        created_at: 4,
        updated_at: 4,
    }
}

/// The store at `at`, with runner r1, agent a1 and thread t1.
pub(crate) async fn seeded(at: &StoreAt) -> Arc<dyn ControlPlaneStore> {
    let store = at.open().await;
    store.add_runner(&runner("r1", "one")).await.unwrap();
    store.put_agent(&agent("a1", "r1")).await.unwrap();
    store
        .apply(&change(
            "t1",
            Upsert::Thread(thread("t1", "a1", "r1")),
            "thread",
        ))
        .await
        .unwrap();
    store
}

async fn each_thread_change_gets_the_next_dense_seq_and_survives_a_reopen(at: StoreAt) {
    let store = seeded(&at).await;
    let entry = store
        .apply(&change("t1", Upsert::Turn(turn("running", "q1")), "turn"))
        .await
        .unwrap();
    assert_eq!(entry.seq, 2);
    let entry = store
        .apply(&change("t1", Upsert::Turn(turn("completed", "q2")), "turn"))
        .await
        .unwrap();
    assert_eq!(entry.seq, 3);
    store.close().await;

    let store = at.open().await;
    let updates = store.thread_updates("t1", 1, 100).await.unwrap();
    assert_eq!(
        updates.iter().map(|u| u.seq).collect::<Vec<_>>(),
        vec![2, 3]
    );
    let stored = store.turn("t1", "turn-1").await.unwrap().unwrap();
    // The latest status, but the starting request and first seq of the first write.
    assert_eq!(stored.status, "completed");
    assert_eq!(stored.request_id, "q1");
    assert_eq!(stored.first_seq, 2);
    assert_eq!(store.runners().await.unwrap(), vec![runner("r1", "one")]);
}

async fn a_request_is_linked_to_its_thread_and_turn_once(at: StoreAt) {
    let store = seeded(&at).await;
    let request = RequestRecord {
        id: "q1".into(),
        runner_id: "r1".into(),
        kind: "create_user_message".into(),
        agent_id: Some("a1".into()),
        thread_id: Some("t1".into()),
        turn_id: None,
        params: "{}".into(),
        created_at: 5,
    };
    store.put_request(&request).await.unwrap();
    // Recording it again (a re-send) changes nothing.
    store.put_request(&request).await.unwrap();
    // Recorded again once its turn is known, then with another turn in a
    // batch: only what it did not know is filled in.
    let linked = |turn: &str| RequestRecord {
        thread_id: None,
        turn_id: Some(turn.into()),
        ..request.clone()
    };
    store.put_request(&linked("turn-1")).await.unwrap();
    store
        .write(&[Write::Request(linked("turn-2"))])
        .await
        .unwrap();
    let stored = store.request("q1").await.unwrap().unwrap();
    assert_eq!(stored.thread_id.as_deref(), Some("t1"));
    assert_eq!(stored.turn_id.as_deref(), Some("turn-1"));
}

async fn load_counts_running_turns_and_live_agents(at: StoreAt) {
    let store = seeded(&at).await;
    store.add_runner(&runner("r2", "two")).await.unwrap();
    store
        .apply(&change("t1", Upsert::Turn(turn("running", "q1")), "turn"))
        .await
        .unwrap();
    let loads = store.runner_loads().await.unwrap();
    assert_eq!(
        loads,
        vec![
            RunnerLoad {
                runner_id: "r1".into(),
                running_turns: 1,
                agents: 1
            },
            RunnerLoad {
                runner_id: "r2".into(),
                running_turns: 0,
                agents: 0
            },
        ]
    );
}

async fn a_runner_name_is_taken_once(at: StoreAt) {
    let store = seeded(&at).await;
    let mut again = runner("r9", "one");
    again.token_hash = "other".into();
    assert!(store.add_runner(&again).await.is_err());
    assert_eq!(
        store.runner_by_name("one").await.unwrap().map(|r| r.id),
        Some("r1".into())
    );
}

async fn api_tokens_are_added_listed_by_age_and_revoked_by_name(at: StoreAt) {
    let store = at.open().await;
    let token = |id: &str, name: &str, at: i64| ApiTokenRecord {
        id: id.into(),
        name: name.into(),
        token_hash: format!("hash-{id}"),
        created_at: at,
        read_only: name == "ci",
    };
    store.add_api_token(&token("k2", "ci", 2)).await.unwrap();
    store.add_api_token(&token("k1", "alice", 1)).await.unwrap();
    // A name is taken once.
    assert!(store.add_api_token(&token("k3", "ci", 3)).await.is_err());
    assert_eq!(
        store.api_tokens().await.unwrap(),
        vec![token("k1", "alice", 1), token("k2", "ci", 2)]
    );

    assert!(store.revoke_api_token("alice").await.unwrap());
    assert!(!store.revoke_api_token("alice").await.unwrap());
    store.close().await;
    let store = at.open().await;
    assert_eq!(
        store.api_tokens().await.unwrap(),
        vec![token("k2", "ci", 2)]
    );
}

async fn a_batch_is_written_whole_in_order_or_not_at_all(at: StoreAt) {
    let store = seeded(&at).await;
    let request = RequestRecord {
        id: "q1".into(),
        runner_id: "r1".into(),
        kind: "create_user_message".into(),
        agent_id: Some("a1".into()),
        thread_id: Some("t1".into()),
        turn_id: None,
        params: "{}".into(),
        created_at: 5,
    };
    let running = Write::Change {
        seq: 2,
        change: change("t1", Upsert::Turn(turn("running", "q1")), "turn"),
    };
    let link = Write::Request(RequestRecord {
        turn_id: Some("turn-1".into()),
        ..request.clone()
    });
    let entries = store
        .write(&[Write::Request(request.clone()), link, running.clone()])
        .await
        .unwrap();
    assert_eq!(entries.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2]);
    assert_eq!(store.last_seq("t1").await.unwrap(), 2);
    let linked = store.request("q1").await.unwrap().unwrap();
    assert_eq!(linked.turn_id.as_deref(), Some("turn-1"));

    // A seq written twice fails the whole batch: the completion before it
    // is not kept either.
    let completed = Write::Change {
        seq: 3,
        change: change("t1", Upsert::Turn(turn("completed", "q1")), "turn"),
    };
    assert!(store.write(&[completed, running]).await.is_err());
    assert_eq!(store.last_seq("t1").await.unwrap(), 2);
    let stored = store.turn("t1", "turn-1").await.unwrap().unwrap();
    assert_eq!((stored.status.as_str(), stored.first_seq), ("running", 2));
}

/// Two stores on one PostgreSQL database, as two replicas: changes applied
/// to one thread from both at once each get the next seq, none lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_applying_to_one_thread_keep_its_seqs_dense() {
    let Some(at) = StoreAt::new(crate::support::Backend::Postgres).await else {
        return;
    };
    let first = seeded(&at).await;
    let second = at.open().await;
    let writers: Vec<_> = [first.clone(), second]
        .into_iter()
        .map(|store| {
            tokio::spawn(async move {
                for _ in 0..20 {
                    store
                        .apply(&change("t1", Upsert::Nothing, "note"))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let seqs: Vec<i64> = first
        .thread_updates("t1", 0, 100)
        .await
        .unwrap()
        .iter()
        .map(|u| u.seq)
        .collect();
    assert_eq!(seqs, (1..=41).collect::<Vec<_>>());
}

/// The engine's database is not the control plane's: opening one says so.
#[tokio::test]
async fn the_engines_database_is_refused_saying_why() {
    let Some(db) = gantry_testkit::postgres::TestDatabase::create().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let engine = gantry_store::PostgresStore::open(&db.url(), &dir.path().join("secret.key"))
        .await
        .unwrap();
    engine.close().await;
    let err = gantry_control_plane::store::PostgresControlPlaneStore::open(&db.url())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("a database of its own"), "{err}");
    assert!(err.contains(db.name()), "names the database: {err}");
}

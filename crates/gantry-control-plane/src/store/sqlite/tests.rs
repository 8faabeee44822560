//! The SQLite control-plane store on a real file.

use super::*;

fn runner(id: &str, name: &str) -> RunnerRecord {
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

fn agent(id: &str, runner_id: &str) -> AgentRecord {
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

fn thread(id: &str, agent_id: &str, runner_id: &str) -> ThreadRecord {
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

fn change(thread_id: &str, upsert: Upsert, kind: &str) -> ThreadChange {
    ThreadChange {
        thread_id: thread_id.into(),
        ts: 10,
        upsert,
        kind: kind.into(),
        data: format!("{{\"kind\":\"{kind}\"}}"),
    }
}

fn turn(status: &str, request_id: &str) -> TurnRecord {
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

/// A store with runner r1, agent a1 and thread t1.
async fn seeded(dir: &Path) -> SqliteControlPlaneStore {
    let store = SqliteControlPlaneStore::open_in(dir).await.unwrap();
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

#[tokio::test]
async fn each_thread_change_gets_the_next_dense_seq_and_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let store = seeded(dir.path()).await;
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

    let store = SqliteControlPlaneStore::open_in(dir.path()).await.unwrap();
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

#[tokio::test]
async fn a_request_is_linked_to_its_thread_and_turn_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = seeded(dir.path()).await;
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
    store
        .link_request("q1", None, Some("turn-1"))
        .await
        .unwrap();
    store
        .link_request("q1", None, Some("turn-2"))
        .await
        .unwrap();
    let stored = store.request("q1").await.unwrap().unwrap();
    assert_eq!(stored.thread_id.as_deref(), Some("t1"));
    assert_eq!(stored.turn_id.as_deref(), Some("turn-1"));
}

#[tokio::test]
async fn load_counts_running_turns_and_live_agents() {
    let dir = tempfile::tempdir().unwrap();
    let store = seeded(dir.path()).await;
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

#[tokio::test]
async fn a_runner_name_is_taken_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = seeded(dir.path()).await;
    let mut again = runner("r9", "one");
    again.token_hash = "other".into();
    assert!(store.add_runner(&again).await.is_err());
    assert_eq!(
        store.runner_by_name("one").await.unwrap().map(|r| r.id),
        Some("r1".into())
    );
}

#[tokio::test]
async fn api_tokens_are_added_listed_by_age_and_revoked_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteControlPlaneStore::open_in(dir.path()).await.unwrap();
    let token = |id: &str, name: &str, at: i64| ApiTokenRecord {
        id: id.into(),
        name: name.into(),
        token_hash: format!("hash-{id}"),
        created_at: at,
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
    let store = SqliteControlPlaneStore::open_in(dir.path()).await.unwrap();
    assert_eq!(
        store.api_tokens().await.unwrap(),
        vec![token("k2", "ci", 2)]
    );
}

#[tokio::test]
async fn a_batch_is_written_whole_in_order_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let store = seeded(dir.path()).await;
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
    let link = Write::LinkRequest {
        id: "q1".into(),
        thread_id: None,
        turn_id: Some("turn-1".into()),
    };
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

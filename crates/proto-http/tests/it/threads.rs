//! Threads: create, list, read, fork, archive; their errors.

use gantry_testkit::Step;
use serde_json::json;

use crate::common::{assert_error, start};

#[tokio::test]
async fn a_thread_is_created_listed_read_forked_and_archived() {
    let s = start(vec![Step::text("Hello there.")]).await;
    let (status, created) = s
        .post(
            "/v1/threads",
            json!({"name": "first", "model": "mock/test-model"}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["status"], "idle");
    assert_eq!(created["name"], "first");
    assert_eq!(created["workspace"], s.workspace.to_string_lossy().as_ref());
    let id = created["id"].as_str().unwrap().to_owned();

    let (status, sent) = s
        .post(
            &format!("/v1/threads/{id}/messages?wait=true"),
            json!({"text": "hi"}),
        )
        .await;
    assert_eq!(status, 200, "{sent}");
    assert_eq!(sent["turn"]["status"], "completed");

    let (status, detail) = s.get(&format!("/v1/threads/{id}")).await;
    assert_eq!(status, 200);
    let items = detail["turns"][0]["items"].as_array().unwrap();
    assert!(
        items.iter().any(|i| i["text"] == "Hello there."),
        "the answer is in the history: {detail}"
    );

    let (_, list) = s.get("/v1/threads?limit=10").await;
    assert_eq!(list["threads"][0]["id"], id.as_str());

    let (status, fork) = s.post(&format!("/v1/threads/{id}/fork"), json!({})).await;
    assert_eq!(status, 201, "{fork}");
    assert_ne!(fork["id"], id.as_str());

    let (status, archived) = s
        .post(&format!("/v1/threads/{id}/archive"), json!({}))
        .await;
    assert_eq!(status, 200, "{archived}");
    assert_eq!(archived["archived"], true);
    let (_, list) = s.get("/v1/threads").await;
    assert!(
        list["threads"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["id"] != id.as_str())
    );
    let (_, list) = s.get("/v1/threads?archived=true").await;
    assert_eq!(list["threads"][0]["id"], id.as_str());
    let (status, back) = s
        .post(&format!("/v1/threads/{id}/unarchive"), json!({}))
        .await;
    assert_eq!((status, &back["archived"]), (200, &json!(false)));
}

#[tokio::test]
async fn bad_thread_requests_name_what_was_wrong() {
    let s = start(vec![]).await;
    assert_error(&s.get("/v1/threads/no-such-thread").await, 404, "not_found");
    assert_error(
        &s.post("/v1/threads/no-such-thread/fork", json!({})).await,
        404,
        "not_found",
    );
    let missing = s
        .post("/v1/threads", json!({"workspace": "/no/such/dir"}))
        .await;
    assert_error(&missing, 422, "validation_failed");
    assert_eq!(missing.1["error"]["details"]["field"], "workspace");
    let unknown = s.post("/v1/threads", json!({"colour": "red"})).await;
    assert_error(&unknown, 422, "validation_failed");
    assert_eq!(unknown.1["error"]["details"]["field"], "colour");
    let typed = s.post("/v1/threads", json!({"model": 3})).await;
    assert_eq!(typed.1["error"]["details"]["field"], "model");
    let policy = s
        .post("/v1/threads", json!({"policy": {"approval": "sometimes"}}))
        .await;
    assert_eq!(policy.1["error"]["details"]["field"], "policy");
    assert_error(
        &s.post("/v1/threads", json!({"agent": "ghost"})).await,
        404,
        "not_found",
    );
    let limit = s.get("/v1/threads?limit=0").await;
    assert_error(&limit, 422, "validation_failed");
    assert_eq!(limit.1["error"]["details"]["field"], "limit");
    let typed = s.get("/v1/threads?limit=many").await;
    assert_eq!(typed.1["error"]["details"]["field"], "limit");
    assert_error(
        &s.get("/v1/threads?archived=maybe").await,
        422,
        "validation_failed",
    );
    assert_error(
        &s.get("/v1/threads?status=busy").await,
        422,
        "validation_failed",
    );
    assert_error(
        &s.get("/v1/threads?sort=new").await,
        422,
        "validation_failed",
    );
    assert_error(&s.get("/v1/nothing-here").await, 404, "not_found");
    assert_error(
        &s.send("DELETE", "/v1/threads", None).await,
        405,
        "method_not_allowed",
    );

    // Not JSON is 400, whatever the route.
    let resp = s
        .http
        .post(s.url("/v1/threads"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_error(&crate::common::read(resp).await, 400, "bad_request");
}

#[tokio::test]
async fn a_deleted_thread_is_gone_and_its_streams_say_so() {
    let s = start(vec![
        crate::common::shell("touch never.txt"),
        Step::text("hi"),
    ])
    .await;
    let id = s.thread(json!({"approval": "untrusted"})).await;
    let mut all = s.events("/v1/events", None).await;
    let mut own = s.events(&format!("/v1/threads/{id}/events"), None).await;

    // A turn waits on an approval: the thread is busy.
    s.post(&format!("/v1/threads/{id}/messages"), json!({"text": "go"}))
        .await;
    own.until(|e| e.event == "item_started" && e.data["payload"]["item"]["type"] == "approval")
        .await;
    let busy = s.send("DELETE", &format!("/v1/threads/{id}"), None).await;
    assert_error(&busy, 409, "conflict");
    let busy = s
        .post(&format!("/v1/threads/{id}/archive"), json!({}))
        .await;
    assert_error(&busy, 409, "conflict");
    s.post(&format!("/v1/threads/{id}/interrupt"), json!({}))
        .await;
    own.until(|e| e.event == "turn_completed").await;

    let (status, body) = s.send("DELETE", &format!("/v1/threads/{id}"), None).await;
    assert_eq!((status, body), (204, serde_json::Value::Null));
    // Its own stream ends with the deletion; every thread's says it too.
    let last = own.until(|e| e.event == "thread_deleted").await;
    assert_eq!(last.last().unwrap().data["thread_id"], id.as_str());
    assert!(own.next().await.is_none(), "the thread's stream ended");
    let said = all.until(|e| e.event == "thread_deleted").await;
    let [.., before, said] = said.as_slice() else {
        panic!("events came before the deletion: {said:?}")
    };
    assert_eq!(said.data["thread_id"], id.as_str());
    // It has no id of its own: the last event id stays, resuming is unchanged.
    assert_eq!(said.id, before.id);

    assert_error(&s.get(&format!("/v1/threads/{id}")).await, 404, "not_found");
    let (_, list) = s.get("/v1/threads?archived=all").await;
    assert_eq!(list["threads"], json!([]));
    assert_error(
        &s.send("DELETE", &format!("/v1/threads/{id}"), None).await,
        404,
        "not_found",
    );
    assert_error(
        &s.get(&format!("/v1/threads/{id}/events")).await,
        404,
        "not_found",
    );
}

//! The todo list over the wire: replaced and read back, shared with the
//! model's `todo_write` tool, and the errors.

use crate::common;

use common::{Server, guard};
use gantry_core::{IfBusy, Notification};
use gantry_testkit::Step;
use gantry_types::{EventPayload, ThreadId};
use proto_code_agent::pb;
use serde_json::json;
use tonic::Code;

fn todo(id: &str, content: &str, status: &str, priority: &str) -> pb::Todo {
    pb::Todo {
        id: id.into(),
        content: content.into(),
        status: status.into(),
        priority: priority.into(),
    }
}

async fn get(s: &mut Server, session: &str) -> Vec<pb::Todo> {
    s.client
        .get_todos(pb::GetTodosRequest {
            session_id: session.into(),
        })
        .await
        .expect("get todos")
        .into_inner()
        .todos
}

async fn set(
    s: &mut Server,
    session: &str,
    todos: Vec<pb::Todo>,
) -> Result<pb::SetTodosResponse, tonic::Status> {
    s.client
        .set_todos(pb::SetTodosRequest {
            session_id: session.into(),
            todos,
        })
        .await
        .map(|r| r.into_inner())
}

/// Runs a turn of `session` through the engine and waits for its end.
async fn run_turn(s: &Server, session: &str, text: &str) {
    let thread = ThreadId::from(session);
    let from = s
        .engine
        .threads()
        .read(&thread)
        .await
        .unwrap()
        .thread
        .last_seq
        + 1;
    let mut sub = s.engine.feeds().subscribe(&thread, from).await.unwrap();
    s.engine
        .turns()
        .send(&thread, text, IfBusy::Reject)
        .await
        .unwrap();
    guard("the turn to end", async {
        while let Some(n) = sub.next().await {
            if let Notification::Event(e) = n
                && matches!(e.payload, EventPayload::TurnCompleted { .. })
            {
                return;
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_is_replaced_and_read_back() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    assert!(get(&mut s, &session).await.is_empty());

    let set_first = set(
        &mut s,
        &session,
        vec![
            todo("1", "write the parser", "in_progress", "high"),
            todo("2", "document it", "", ""),
        ],
    )
    .await
    .unwrap();
    assert!(set_first.success);
    let expected = vec![
        todo("1", "write the parser", "in_progress", "high"),
        todo("2", "document it", "pending", "medium"),
    ];
    assert_eq!(
        set_first.todos, expected,
        "empty status and priority take the defaults"
    );
    assert_eq!(get(&mut s, &session).await, expected);

    // Replacing, not merging.
    let replaced = set(
        &mut s,
        &session,
        vec![todo("3", "ship it", "Completed", "LOW")],
    )
    .await
    .unwrap();
    assert_eq!(replaced.todos, [todo("3", "ship it", "completed", "low")]);
    assert_eq!(get(&mut s, &session).await, replaced.todos);

    let cleared = set(&mut s, &session, vec![]).await.unwrap();
    assert!(cleared.success && cleared.todos.is_empty());
    assert!(get(&mut s, &session).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_todo_write_is_what_clients_read() {
    let mut s = Server::start(vec![
        Step::tool_call(
            "todo_write",
            json!({"todos": [{"id": "a", "content": "run the tests", "status": "cancelled", "priority": "low"}]}),
        ),
        Step::text("noted"),
    ])
    .await;
    let session = s.session().await;
    run_turn(&s, &session, "plan the work").await;
    assert_eq!(
        get(&mut s, &session).await,
        [todo("a", "run the tests", "cancelled", "low")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_todos_are_refused_naming_the_field_and_change_nothing() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    let kept = vec![todo("1", "keep me", "pending", "medium")];
    set(&mut s, &session, kept.clone()).await.unwrap();
    let cases = [
        (vec![todo("1", "x", "done", "")], "todos[0].status"),
        (
            vec![todo("1", "x", "", ""), todo("2", "y", "", "urgent")],
            "todos[1].priority",
        ),
        (vec![todo(" ", "x", "", "")], "todos[0].id"),
        (vec![todo("1", "", "", "")], "todos[0].content"),
        (
            vec![todo("1", "x", "", ""), todo("1", "y", "", "")],
            "todos[1].id",
        ),
    ];
    for (todos, field) in cases {
        let err = set(&mut s, &session, todos.clone()).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{todos:?}: {err:?}");
        assert!(
            err.message().starts_with(&format!("{field}:")),
            "{todos:?}: {err:?}"
        );
    }
    assert_eq!(get(&mut s, &session).await, kept);

    let err = set(&mut s, "nope", kept.clone()).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let err = s
        .client
        .get_todos(pb::GetTodosRequest {
            session_id: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("session_id"), "{err:?}");
}

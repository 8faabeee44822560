//! The task list: written by the model with `todo_write`, read and replaced
//! through the engine, kept with the thread.

use crate::common;

use common::*;
use gantry_core::EngineConfig;
use gantry_testkit::Step;
use gantry_types::{ItemKind, TodoItem, TodoPriority, TodoStatus, TurnStatus};
use serde_json::json;

#[tokio::test]
async fn a_turn_that_writes_todos_keeps_them_with_the_thread() {
    let h = Harness::new(vec![
        Step::tool_call(
            "todo_write",
            json!({"todos": [
                {"id": "1", "content": "write the parser", "status": "in_progress", "priority": "high"},
                {"id": "2", "content": "add tests", "status": "pending"}
            ]}),
        ),
        Step::tool_call("todo_write", json!({"todos": [{"id": "1", "content": "dup", "status": "pending"}, {"id": "1", "content": "dup", "status": "pending"}]})),
        Step::text("planned"),
    ])
    .await;
    let (_, seen) = h.run_turn("plan the work").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let lists: Vec<ItemKind> = completed_kinds(&seen)
        .into_iter()
        .filter(|k| k.name() == "todo_list")
        .collect();
    assert_eq!(lists.len(), 2, "an item for every call");

    let todos = h.engine.threads().todos(&h.thread.id).await.unwrap();
    assert_eq!(
        todos.len(),
        2,
        "the invalid second list did not replace the first"
    );
    assert_eq!(todos[0].status, TodoStatus::InProgress);
    assert_eq!(todos[0].priority, TodoPriority::High);
    assert_eq!(todos[1].priority, TodoPriority::Medium, "default priority");
    let told = last_tool_result(&h.llm, 2);
    assert!(told.contains("appears twice"), "{told}");

    // Replaced through the API, and still there after a restart.
    let done = vec![TodoItem {
        id: "1".into(),
        content: "write the parser".into(),
        status: TodoStatus::Completed,
        priority: TodoPriority::High,
    }];
    h.engine
        .threads()
        .set_todos(&h.thread.id, done.clone())
        .await
        .unwrap();
    let bad = h
        .engine
        .threads()
        .set_todos(
            &h.thread.id,
            vec![TodoItem {
                id: String::new(),
                content: "x".into(),
                status: TodoStatus::Pending,
                priority: TodoPriority::Low,
            }],
        )
        .await;
    assert!(bad.is_err());
    h.engine.flush().await.expect("events stored");
    let restarted = engine_at(h.dir.path(), &h.llm, EngineConfig::default()).await;
    assert_eq!(restarted.threads().todos(&h.thread.id).await.unwrap(), done);
}

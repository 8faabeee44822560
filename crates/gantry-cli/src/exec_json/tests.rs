//! The lines as scripts read them: exact JSON for each stored event.

use super::*;
use serde_json::{Value, json};
use stored::{ItemId, ItemKind, TurnId};

fn item(kind: ItemKind, status: stored::ItemStatus) -> stored::Item {
    stored::Item {
        id: ItemId::from("i1"),
        turn_id: TurnId::from("t1"),
        round: 1,
        status,
        started_at: 1,
        completed_at: None,
        kind,
        tool_call: None,
    }
}

fn shown(i: &stored::Item) -> Value {
    serde_json::to_value(Item::from(i)).unwrap()
}

#[test]
fn every_item_kind_keeps_its_type_name() {
    let kinds = [
        ItemKind::UserMessage {
            text: "hi".into(),
            key: Some("k".into()),
            images: Vec::new(),
        },
        ItemKind::AgentMessage { text: "a".into() },
        ItemKind::Reasoning {
            text: "r".into(),
            signature: Some("sig".into()),
            opaque: None,
        },
        ItemKind::CommandExecution {
            command: "ls".into(),
            cwd: "/w".into(),
            process_id: Some(7),
            output: String::new(),
            exit_code: None,
            duration_ms: None,
        },
        ItemKind::FileChange {
            path: "a".into(),
            diff: String::new(),
        },
        ItemKind::ToolCall {
            name: "grep".into(),
            arguments: json!({"pattern": "x"}),
            result: None,
            error: None,
        },
        ItemKind::ContextCompaction {
            summary: String::new(),
            kept_user_messages: vec![],
            tokens_before: 10,
            tokens_after: 2,
            trigger: "clear".into(),
        },
        ItemKind::Error {
            message: "m".into(),
        },
        ItemKind::StructuredOutput {
            schema_name: None,
            payload: Value::Null,
        },
        ItemKind::TodoList { todos: vec![] },
        ItemKind::UserInput {
            request_id: "r".into(),
            call_id: "c".into(),
            questions: Vec::new(),
            timeout_ms: 1,
            answers: None,
            resolved_by: None,
        },
    ];
    for kind in kinds {
        let name = kind.name();
        let v = shown(&item(kind, stored::ItemStatus::InProgress));
        assert_eq!(v["type"], name);
        assert_eq!(v["id"], "i1");
        assert_eq!(v["status"], "in_progress");
        assert!(v.get("signature").is_none() && v.get("key").is_none());
    }
}

#[test]
fn a_failed_edit_says_why_and_a_new_file_is_an_add() {
    let mut failed = item(
        ItemKind::FileChange {
            path: "a.txt".into(),
            diff: String::new(),
        },
        stored::ItemStatus::Failed,
    );
    failed.tool_call = Some(stored::ToolCallOrigin {
        call_id: "c".into(),
        name: "edit_file".into(),
        arguments: "{}".into(),
        output: Some("old_string not found".into()),
        refused: None,
        internal: false,
    });
    assert_eq!(
        shown(&failed),
        json!({"id": "i1", "type": "file_change", "path": "a.txt", "change": null,
               "diff": "", "lines_added": 0, "lines_removed": 0,
               "error": "old_string not found", "status": "failed"})
    );
}

#[test]
fn only_turn_output_is_printed() {
    let event = |payload| stored::Event {
        thread_id: stored::ThreadId::from("th"),
        seq: 3,
        ts: 0,
        turn_id: None,
        item_id: None,
        payload,
        cursor: 0,
    };
    assert_eq!(
        Line::from_event(&event(stored::EventPayload::ThreadPaused)),
        None
    );
    let failed = Line::from_event(&event(stored::EventPayload::TurnCompleted {
        turn_id: TurnId::from("t1"),
        status: stored::TurnStatus::Failed,
        rounds: 2,
        usage: stored::Usage::default(),
        cost_usd: 0.0,
        error: Some("no".into()),
        failure: Some(stored::TurnFailure::ModelUnreachable),
    }))
    .unwrap();
    assert_eq!(
        serde_json::to_value(failed).unwrap(),
        json!({"type": "turn.failed", "seq": 3, "turn_id": "t1", "rounds": 2,
               "usage": {"input_tokens": 0, "cached_input_tokens": 0,
                         "cache_write_tokens": 0, "output_tokens": 0,
                         "reasoning_tokens": 0},
               "cost_usd": null,
               "error": {"message": "no", "kind": "model_unreachable"}})
    );
    let interrupted = Line::from_event(&event(stored::EventPayload::TurnCompleted {
        turn_id: TurnId::from("t1"),
        status: stored::TurnStatus::Interrupted,
        rounds: 1,
        usage: stored::Usage::default(),
        cost_usd: 0.25,
        error: Some("interrupted".into()),
        failure: None,
    }))
    .unwrap();
    let v = serde_json::to_value(interrupted).unwrap();
    assert_eq!(v["type"], "turn.completed");
    assert_eq!(v["status"], "interrupted");
    assert_eq!(v["reason"], "interrupted");
    assert_eq!(v["cost_usd"], 0.25);
}

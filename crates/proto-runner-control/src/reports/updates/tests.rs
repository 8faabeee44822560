use super::*;
use gantry_runner_protocol::ProtocolVersion::{V0_2, V0_7};
use gantry_types::ItemId;

fn item(kind: ItemKind, status: ItemStatus) -> Item {
    Item {
        id: ItemId::from("item-1"),
        turn_id: TurnId::from("turn-1"),
        round: 1,
        status,
        started_at: 0,
        completed_at: None,
        kind,
        tool_call: None,
    }
}

fn update(message: ClientMessage) -> ItemUpdate {
    match message.payload {
        Payload::Item(u) => u,
        other => panic!("not an item update: {other:?}"),
    }
}

fn thread() -> ThreadId {
    ThreadId::from("thread-1")
}

fn command(process_id: Option<u32>, output: &str) -> ItemKind {
    ItemKind::CommandExecution {
        command: "ls".into(),
        cwd: "/w".into(),
        process_id,
        output: output.into(),
        exit_code: Some(0),
        duration_ms: Some(3),
    }
}

#[test]
fn a_command_carries_its_command_cwd_pid_and_output() {
    let done = item(command(Some(42), "a\nb\n"), ItemStatus::Completed);
    let msg = item_update(&done, &thread(), Some("r".into()), V0_2).unwrap();
    assert_eq!(msg.request_id.as_deref(), Some("r"));
    let u = update(msg);
    assert_eq!(u.status, WireItemStatus::Completed);
    assert_eq!(u.item_type, ItemType::CommandExecution);
    // Its text is its command line, as CompanyHelm's runner sends it.
    assert_eq!(u.text.as_deref(), Some("ls"));
    let c = u.command_execution_item.unwrap();
    assert_eq!(
        (c.command.as_str(), c.cwd.as_str(), c.process_id.as_str()),
        ("ls", "/w", "42")
    );
    assert_eq!(c.output.as_deref(), Some("a\nb\n"));
}

#[test]
fn a_command_whose_process_never_started_says_unknown() {
    let refused = item(command(None, ""), ItemStatus::Failed);
    let u = update(item_update(&refused, &thread(), None, V0_7).unwrap());
    let c = u.command_execution_item.unwrap();
    assert_eq!(c.process_id, NO_PROCESS);
    assert_eq!(c.output, None);
}

#[test]
fn empty_texts_say_what_the_item_is_as_companyhelms_runner_does() {
    let started = item(
        ItemKind::AgentMessage {
            text: String::new(),
        },
        ItemStatus::InProgress,
    );
    let u = update(item_update(&started, &thread(), None, V0_7).unwrap());
    assert_eq!(
        (u.status, u.text.as_deref()),
        (WireItemStatus::Running, Some("Agent message"))
    );
    let file = item(
        ItemKind::FileChange {
            path: "src/lib.rs".into(),
            diff: String::new(),
        },
        ItemStatus::Completed,
    );
    let u = update(item_update(&file, &thread(), None, V0_7).unwrap());
    assert_eq!(
        u.text.as_deref(),
        Some("File change (completed): 1 file (src/lib.rs)")
    );
    let mcp = item(
        ItemKind::ToolCall {
            name: "mcp__docs__search".into(),
            arguments: serde_json::json!({}),
            result: Some("found".into()),
            error: None,
        },
        ItemStatus::Completed,
    );
    let u = update(item_update(&mcp, &thread(), None, V0_7).unwrap());
    assert_eq!(u.item_type, ItemType::McpToolCall);
    assert_eq!(
        u.text.as_deref(),
        Some("MCP docs/search (completed): completed")
    );
}

#[test]
fn items_codex_has_no_type_for_travel_as_unknown_saying_what_they_are() {
    let error = item(
        ItemKind::Error {
            message: "model unreachable".into(),
        },
        ItemStatus::Completed,
    );
    let u = update(item_update(&error, &thread(), None, V0_2).unwrap());
    assert_eq!(u.item_type, ItemType::Unknown);
    assert_eq!(u.text.as_deref(), Some("Error: model unreachable"));
    let output = item(
        ItemKind::StructuredOutput {
            schema_name: Some("verdict".into()),
            payload: serde_json::json!({"ok": true}),
        },
        ItemStatus::Completed,
    );
    let u = update(item_update(&output, &thread(), None, V0_7).unwrap());
    assert_eq!(u.item_type, ItemType::Unknown);
    assert_eq!(
        u.text.as_deref(),
        Some(r#"Structured output (verdict): {"ok":true}"#)
    );
    let todos = ItemKind::TodoList { todos: Vec::new() };
    let list = item(todos, ItemStatus::Completed);
    assert!(item_update(&list, &thread(), None, V0_2).is_none());
    // 0.7 has a type for the list: a plan.
    let plan = update(item_update(&list, &thread(), None, V0_7).unwrap());
    assert_eq!(plan.item_type, ItemType::Plan);
    assert_eq!(plan.thread_id.as_deref(), Some("thread-1"));
    assert_eq!(plan.sdk_turn_id.as_deref(), Some("turn-1"));
}

#[test]
fn a_long_message_is_summed_up_in_800_characters_and_an_answer_goes_whole() {
    let message = |kind| item(kind, ItemStatus::Completed);
    let text_of = |item: &Item| {
        update(item_update(item, &thread(), None, V0_7).unwrap())
            .text
            .unwrap()
    };
    let asked = message(ItemKind::UserMessage {
        text: "é".repeat(2000),
        key: None,
        images: Vec::new(),
    });
    let text = text_of(&asked);
    assert_eq!(text.chars().count(), 800);
    assert!(text.ends_with("..."));
    let answer = message(ItemKind::AgentMessage {
        text: "é".repeat(2000),
    });
    assert_eq!(text_of(&answer).chars().count(), 2000);
}

use super::*;
use gantry_types::{ItemId, ItemStatus, ToolCallOrigin};

fn event(seq: u64, payload: EventPayload) -> Notification {
    Notification::Event(std::sync::Arc::new(Event {
        thread_id: ThreadId("t".into()),
        seq,
        ts: 0,
        turn_id: None,
        item_id: None,
        payload,
        cursor: seq,
    }))
}

fn topics(outs: &[Out]) -> Vec<&str> {
    outs.iter()
        .map(|o| match o {
            Out::Publish { topic, .. } => *topic,
            Out::Updated(_) => "(updated)",
            Out::Deleted(_) => "(deleted)",
        })
        .collect()
}

#[test]
fn results_are_cut_to_512_bytes_on_a_character_boundary() {
    assert_eq!(clip("short"), "short");
    let long = "é".repeat(400);
    let cut = clip(&long);
    assert!(cut.ends_with("...") && cut.len() <= RESULT_LIMIT + 3);
    assert!(long.starts_with(cut.trim_end_matches("...")));
}

#[test]
fn a_refused_call_seen_only_completed_still_starts_and_ends() {
    let mut mapper = TopicMapper::default();
    let item = Item {
        id: ItemId("i1".into()),
        turn_id: TurnId("u".into()),
        round: 1,
        status: ItemStatus::Failed,
        started_at: 0,
        completed_at: Some(1),
        kind: ItemKind::ToolCall {
            name: "nope".into(),
            arguments: json!({}),
            result: None,
            error: Some("unknown tool".into()),
        },
        tool_call: Some(ToolCallOrigin {
            call_id: "c1".into(),
            name: "nope".into(),
            arguments: "{}".into(),
            output: Some("x".repeat(600)),
            refused: None,
            internal: false,
        }),
    };
    let outs = mapper.map(&event(3, EventPayload::ItemCompleted { item }));
    assert_eq!(topics(&outs), ["tool.start", "tool.end"]);
    let Out::Publish { payload, .. } = &outs[1] else {
        panic!("not a publish")
    };
    assert_eq!(payload["is_error"], true);
    assert_eq!(payload["result"].as_str().unwrap().len(), RESULT_LIMIT + 3);
    let archived = mapper.map(&event(4, EventPayload::ThreadArchived));
    assert_eq!(topics(&archived), ["(deleted)"]);
}

#[test]
fn tokens_after_a_lag_are_neither_repeated_nor_lost() {
    use gantry_types::Delta;
    let mut mapper = TopicMapper::default();
    let delta = |text: &str| {
        Notification::Delta(std::sync::Arc::new(Delta {
            thread_id: ThreadId("t".into()),
            turn_id: TurnId("u".into()),
            item_id: ItemId("m".into()),
            after_seq: 2,
            kind: DeltaKind::AgentText(text.into()),
        }))
    };
    let tokens = |outs: Vec<Out>| -> Vec<String> {
        outs.into_iter()
            .filter_map(|o| match o {
                Out::Publish {
                    topic: "llm.token",
                    payload,
                    ..
                } => Some(payload["token"].as_str().unwrap().to_owned()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(tokens(mapper.map(&delta("ab"))), ["ab"]);
    mapper.resync_open_items();
    // The resumed subscription's first delta is the whole text so far.
    assert_eq!(tokens(mapper.map(&delta("abcd"))), ["cd"]);
    assert_eq!(tokens(mapper.map(&delta("e"))), ["e"]);
    let item = Item {
        id: ItemId("m".into()),
        turn_id: TurnId("u".into()),
        round: 1,
        status: ItemStatus::Completed,
        started_at: 0,
        completed_at: Some(1),
        kind: ItemKind::AgentMessage {
            text: "abcdefg".into(),
        },
        tool_call: None,
    };
    // Missed deltas come with the completed item.
    let outs = mapper.map(&event(5, EventPayload::ItemCompleted { item }));
    assert_eq!(tokens(outs), ["fg"]);
}

#[test]
fn the_engines_internal_tool_calls_publish_no_tool_topics() {
    let mut mapper = TopicMapper::default();
    let mut item = Item {
        id: ItemId("i2".into()),
        turn_id: TurnId("u".into()),
        round: 1,
        status: ItemStatus::InProgress,
        started_at: 0,
        completed_at: None,
        kind: ItemKind::StructuredOutput {
            schema_name: None,
            payload: json!({"answer": 42}),
        },
        tool_call: None,
    };
    let started = mapper.map(&event(3, EventPayload::ItemStarted { item: item.clone() }));
    item.status = ItemStatus::Completed;
    item.tool_call = Some(ToolCallOrigin {
        call_id: "c2".into(),
        name: "submit_output".into(),
        arguments: r#"{"answer":42}"#.into(),
        output: Some("accepted".into()),
        refused: None,
        internal: true,
    });
    let ended = mapper.map(&event(4, EventPayload::ItemCompleted { item }));
    let all: Vec<&str> = topics(&started).into_iter().chain(topics(&ended)).collect();
    assert!(all.iter().all(|t| !t.starts_with("tool.")), "{all:?}");
}

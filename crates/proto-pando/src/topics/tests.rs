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

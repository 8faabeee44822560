//! Sample threads and events covering every payload and item kind.

use gantry_types::{
    Event, EventPayload, ForkOrigin, Item, ItemId, ItemKind, ItemStatus, QueuedInput, Thread,
    ThreadId, ThreadStatus, ToolCallOrigin, Turn, TurnId, TurnStatus, Usage,
};
use serde_json::json;

/// A deterministic, time-ordered thread id: `n` sorts like creation order.
pub(crate) fn thread_id(n: u32) -> ThreadId {
    ThreadId(format!("01900000-0000-7000-8000-{n:012}"))
}

/// A thread with every optional field set.
pub(crate) fn thread(id: &ThreadId, status: ThreadStatus, archived: bool) -> Thread {
    Thread {
        id: id.clone(),
        name: Some("fix the build ✓".into()),
        cwd: "/work/ws".into(),
        model: "gpt-test".into(),
        reasoning: Some("high".into()),
        instructions: Some("be brief".into()),
        endpoint: None,
        temperature: None,
        max_output_tokens: None,
        metadata: Default::default(),
        status,
        archived,
        preview: "why does \"cargo\" fail?\n".into(),
        created_at: 1_700_000_000_000,
        updated_at: 1_700_000_000_500,
        forked_from: Some(ForkOrigin {
            thread_id: ThreadId::from("source"),
            turn_id: TurnId::from("turn-0"),
        }),
        usage: Usage {
            input_tokens: 10,
            output_tokens: 20,
            cached_input_tokens: 3,
            cache_write_tokens: 5,
            reasoning_tokens: 4,
        },
        agent_id: Some("agent-1".into()),
        cost_usd: 0.25,
        paused: false,
        policy: Default::default(),
        lane_handlers: Vec::new(),
        todos: Vec::new(),
        goal: None,
        last_seq: 7,
    }
}

fn item(turn: &TurnId, n: u32, status: ItemStatus, kind: ItemKind) -> Item {
    Item {
        id: ItemId(format!("item-{n}")),
        turn_id: turn.clone(),
        round: n,
        status,
        started_at: 1_700_000_000_100 + i64::from(n),
        completed_at: (status != ItemStatus::InProgress).then_some(1_700_000_000_200),
        kind,
        tool_call: None,
    }
}

fn item_kinds() -> Vec<ItemKind> {
    vec![
        ItemKind::UserMessage {
            text: "hello 👋".into(),
            key: Some("req-1".into()),
            images: Vec::new(),
        },
        ItemKind::AgentMessage {
            text: "hi\nthere".into(),
        },
        ItemKind::Reasoning {
            text: "thinking…".into(),
            signature: Some("sig".into()),
            opaque: Some("opaque".into()),
        },
        ItemKind::CommandExecution {
            command: "cargo build".into(),
            cwd: "/work/ws".into(),
            process_id: Some(4242),
            output: "error[E0308]\u{0}\t".into(),
            exit_code: Some(101),
            duration_ms: Some(1234),
        },
        ItemKind::FileChange {
            path: "src/lib.rs".into(),
            diff: "--- a\n+++ b\n@@ -1 +1 @@\n-a\n+b\n".into(),
        },
        ItemKind::ToolCall {
            name: "mcp__fs__read".into(),
            arguments: json!({"path": "a.rs", "n": [1, 2.5, null, true], "o": {}}),
            result: Some("ok".into()),
            error: Some("partial".into()),
        },
        ItemKind::Error {
            message: "model timed out".into(),
        },
    ]
}

/// Every payload kind (and every item kind) as the log of `id`, seq 1.., in order.
pub(crate) fn all_kinds_log(id: &ThreadId) -> Vec<Event> {
    let turn = TurnId::from("turn-1");
    let mut payloads = vec![
        EventPayload::ThreadCreated {
            thread: thread(id, ThreadStatus::Idle, false),
        },
        EventPayload::ThreadArchived,
        EventPayload::ThreadUnarchived,
        EventPayload::InputQueued {
            input: QueuedInput {
                turn_id: turn.clone(),
                text: "next".into(),
                key: None,
                images: Vec::new(),
                limits: Default::default(),
                unattended: false,
                trace_parent: None,
            },
        },
        EventPayload::TurnStarted {
            turn: Turn {
                id: turn.clone(),
                thread_id: id.clone(),
                input: "do it".into(),
                key: Some("req-1".into()),
                status: TurnStatus::Running,
                started_at: 1_700_000_000_050,
                completed_at: None,
                rounds: 0,
                usage: Usage::default(),
                cost_usd: 0.0,
                error: None,
                failure: None,
                model: None,
                trace_parent: None,
            },
        },
    ];
    for (n, kind) in (1..).zip(item_kinds()) {
        let started = item(&turn, n, ItemStatus::InProgress, kind.clone());
        let mut done = item(&turn, n, ItemStatus::Completed, kind);
        if n == 4 {
            done.tool_call = Some(ToolCallOrigin {
                call_id: "call_1".into(),
                name: "shell".into(),
                arguments: "{\"cmd\": \"cargo build\"".into(),
                output: Some("exit 101".into()),
                refused: None,
                internal: false,
            });
        }
        payloads.push(EventPayload::ItemStarted { item: started });
        payloads.push(EventPayload::ItemCompleted { item: done });
    }
    payloads.push(EventPayload::TurnCompleted {
        turn_id: turn,
        status: TurnStatus::Failed,
        rounds: 3,
        usage: Usage {
            input_tokens: 1,
            output_tokens: 2,
            ..Usage::default()
        },
        cost_usd: 0.125,
        error: Some("boom".into()),
        failure: None,
    });
    (1..)
        .zip(payloads)
        .map(|(seq, payload)| event(id, seq, payload))
        .collect()
}

/// An event with the turn and item taken from its payload.
pub(crate) fn event(id: &ThreadId, seq: u64, payload: EventPayload) -> Event {
    let (turn_id, item_id) = payload.subject();
    Event {
        thread_id: id.clone(),
        seq,
        ts: 1_700_000_000_000 + seq as i64,
        turn_id: turn_id.cloned(),
        item_id: item_id.cloned(),
        payload,
        cursor: 0,
    }
}

/// A small event for bulk tests.
pub(crate) fn archived_event(id: &ThreadId, seq: u64) -> Event {
    event(id, seq, EventPayload::ThreadArchived)
}

/// Events as committed: without the cursors the store gave them.
pub(crate) fn without_cursors(events: Vec<Event>) -> Vec<Event> {
    events
        .into_iter()
        .map(|mut e| {
            e.cursor = 0;
            e
        })
        .collect()
}

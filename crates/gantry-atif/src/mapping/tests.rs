use gantry_types::{
    Item, ItemStatus, Thread, ThreadId, ThreadStatus, ToolCallOrigin, Turn, TurnId, TurnStatus,
};

use super::*;

fn ev(seq: u64, payload: EventPayload) -> Event {
    Event {
        thread_id: ThreadId::from("t"),
        seq,
        ts: 1_000 + seq as i64,
        turn_id: None,
        item_id: None,
        payload,
        cursor: seq,
    }
}

fn thread() -> Thread {
    Thread {
        id: ThreadId::from("t"),
        name: None,
        cwd: "/w".into(),
        model: "m".into(),
        reasoning: None,
        instructions: None,
        endpoint: None,
        temperature: None,
        max_output_tokens: None,
        metadata: Default::default(),
        status: ThreadStatus::Idle,
        archived: false,
        preview: String::new(),
        created_at: 0,
        updated_at: 0,
        forked_from: None,
        agent_id: None,
        usage: Usage::default(),
        cost_usd: 0.0,
        paused: false,
        policy: Default::default(),
        lane_handlers: Vec::new(),
        todos: Vec::new(),
        goal: None,
        last_seq: 0,
    }
}

fn item(id: &str, round: u32, kind: ItemKind, call: Option<ToolCallOrigin>) -> Item {
    Item {
        id: id.into(),
        turn_id: TurnId::from("u"),
        round,
        status: ItemStatus::Completed,
        started_at: 1_000 + round as i64 * 10,
        completed_at: Some(1_005 + round as i64 * 10),
        kind,
        tool_call: call,
    }
}

/// A turn of two rounds: reasoning and a failing command, then the answer.
fn log() -> Vec<Event> {
    let turn = Turn::started(
        TurnId::from("u"),
        ThreadId::from("t"),
        "fix it".into(),
        None,
        1_000,
    );
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 20,
        cached_input_tokens: 40,
        ..Usage::default()
    };
    let call = ToolCallOrigin {
        call_id: "call_1".into(),
        name: "shell".into(),
        arguments: r#"{"command":"false"}"#.into(),
        output: Some("exit code 1".into()),
        refused: None,
        internal: false,
    };
    let items = [
        item(
            "i0",
            0,
            ItemKind::UserMessage {
                text: "fix it".into(),
                key: None,
                images: Vec::new(),
            },
            None,
        ),
        item(
            "i1",
            1,
            ItemKind::Reasoning {
                text: "try false".into(),
                signature: None,
                opaque: None,
            },
            None,
        ),
        item(
            "i2",
            1,
            ItemKind::CommandExecution {
                command: "false".into(),
                cwd: "/w".into(),
                process_id: None,
                output: String::new(),
                exit_code: Some(1),
                duration_ms: Some(3),
            },
            Some(call),
        ),
        item(
            "i3",
            2,
            ItemKind::AgentMessage {
                text: "done".into(),
            },
            None,
        ),
    ];
    let mut events = vec![
        ev(1, EventPayload::ThreadCreated { thread: thread() }),
        ev(2, EventPayload::TurnStarted { turn }),
    ];
    // Round 1 reports two responses (as a retried request would), round 2 one.
    for (it, round) in items.into_iter().zip([0u32, 1, 1, 2]) {
        let seq = events.len() as u64 + 1;
        events.push(ev(seq, EventPayload::ItemCompleted { item: it }));
        if round >= 1 {
            let seq = events.len() as u64 + 1;
            events.push(ev(
                seq,
                EventPayload::ModelResponded {
                    turn_id: TurnId::from("u"),
                    round,
                    usage,
                    context_window: None,
                    call: None,
                },
            ));
        }
    }
    let seq = events.len() as u64 + 1;
    let mut total = usage;
    total.add(&usage);
    total.add(&usage);
    events.push(ev(
        seq,
        EventPayload::TurnCompleted {
            turn_id: TurnId::from("u"),
            status: TurnStatus::Completed,
            rounds: 2,
            usage: total,
            cost_usd: 0.25,
            error: None,
            failure: None,
        },
    ));
    events
}

fn info(price: &dyn Fn(&str) -> Option<ModelCost>) -> AgentInfo<'_> {
    AgentInfo {
        name: "gantry",
        version: "0.1.0",
        tools: None,
        price,
    }
}

#[test]
fn rounds_become_agent_steps_with_their_calls_results_and_usage() {
    let price = |_: &str| {
        Some(ModelCost {
            input: 1.0,
            output: 2.0,
            cache_read: 0.5,
            cache_write: 0.0,
        })
    };
    let t = trajectory(&log(), &info(&price)).expect("a turn");
    assert_eq!(t.schema_version, "ATIF-v1.8");
    assert_eq!(t.session_id.as_deref(), Some("t"));
    let sources: Vec<Source> = t.steps.iter().map(|s| s.source).collect();
    assert_eq!(sources, [Source::User, Source::Agent, Source::Agent]);
    assert_eq!(
        t.steps.iter().map(|s| s.step_id).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let tools = &t.steps[1];
    assert_eq!(tools.reasoning_content.as_deref(), Some("try false"));
    let calls = tools.tool_calls.as_ref().expect("a call");
    assert_eq!(calls[0].function_name, "shell");
    assert_eq!(calls[0].arguments["command"], "false");
    let result = &tools.observation.as_ref().expect("a result").results[0];
    assert_eq!(result.source_call_id.as_deref(), Some("call_1"));
    assert_eq!(result.content.as_deref(), Some("exit code 1"));
    assert_eq!(result.extra.as_ref().expect("extra")["exit_code"], 1);
    // Two responses were reported for round 1 (the test log's shape).
    let m = tools.metrics.as_ref().expect("usage");
    assert_eq!(m.prompt_tokens, Some(200));
    assert_eq!(m.cached_tokens, Some(80));
    // (120 plain + 80 cached * 0.5 + 40 out * 2) / 1e6
    assert_eq!(m.cost_usd, Some(240.0 / 1e6));
    assert_eq!(t.steps[2].message, "done");
    let fm = t.final_metrics.as_ref().expect("totals");
    assert_eq!(fm.total_prompt_tokens, Some(300));
    assert_eq!(fm.total_cost_usd, Some(0.25));
    assert_eq!(fm.total_steps, Some(3));
}

#[test]
fn an_unknown_price_leaves_costs_out_and_a_thread_without_turns_has_no_trajectory() {
    let none = |_: &str| None;
    let t = trajectory(&log(), &info(&none)).expect("a turn");
    assert_eq!(t.steps[1].metrics.as_ref().and_then(|m| m.cost_usd), None);
    let only_created = &log()[..1];
    assert_eq!(trajectory(only_created, &info(&none)), Err(NoSteps));
}

#[test]
fn arguments_that_are_no_object_are_kept_raw() {
    assert_eq!(arguments("[1]")["raw"], "[1]");
    assert!(arguments("").is_empty());
}

#[test]
fn an_error_is_a_system_step_and_its_round_counts_its_usage_once() {
    let mut events = log();
    // An error between round 1's items: its command comes after it.
    let error = item(
        "e",
        1,
        ItemKind::Error {
            message: "a tool crashed".into(),
        },
        None,
    );
    let at = events
        .iter()
        .position(|e| matches!(&e.payload, EventPayload::ItemCompleted { item } if item.id.as_str() == "i2"))
        .expect("the command");
    events.insert(at, ev(0, EventPayload::ItemCompleted { item: error }));
    let none = |_: &str| None;
    let t = trajectory(&events, &info(&none)).expect("a turn");
    let sources: Vec<Source> = t.steps.iter().map(|s| s.source).collect();
    assert_eq!(
        sources,
        [
            Source::User,
            Source::Agent,
            Source::System,
            Source::Agent,
            Source::Agent
        ]
    );
    assert_eq!(t.steps[2].message, "a tool crashed");
    // Round 1's two responses are on its first step only.
    assert_eq!(
        t.steps[1].metrics.as_ref().and_then(|m| m.prompt_tokens),
        Some(200)
    );
    assert!(t.steps[3].metrics.is_none(), "{:?}", t.steps[3]);
    assert!(
        t.steps[3].tool_calls.is_some(),
        "the command is still there"
    );
}

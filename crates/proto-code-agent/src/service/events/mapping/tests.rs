//! The mapping of engine events onto `AgentEvent`s, event by event.

use super::*;
use gantry_types::{
    HandlerMode, ItemId, ItemStatus, ToolCallOrigin, TurnId, memory::MemoryItem,
    memory::MemoryScope, memory::MemoryType,
};
use serde_json::json;

fn event(payload: EventPayload) -> Event {
    Event {
        thread_id: ThreadId::from("t1"),
        seq: 7,
        ts: 1_700_000_000_000,
        turn_id: None,
        item_id: None,
        payload,
        cursor: 0,
    }
}

fn item(kind: ItemKind, status: ItemStatus, call: Option<(&str, &str)>) -> Item {
    Item {
        id: ItemId::new(),
        turn_id: TurnId::from("turn-1"),
        round: 1,
        status,
        started_at: 1,
        completed_at: None,
        kind,
        tool_call: call.map(|(name, output)| ToolCallOrigin {
            call_id: "call_1".into(),
            name: name.into(),
            arguments: r#"{"command":"rm -rf x"}"#.into(),
            output: (!output.is_empty()).then(|| output.to_owned()),
            refused: None,
            internal: false,
        }),
    }
}

fn kinds(events: &[pb::AgentEvent]) -> Vec<EventType> {
    events
        .iter()
        .map(|e| EventType::try_from(e.r#type).unwrap())
        .collect()
}

fn command(exit_code: Option<i32>) -> ItemKind {
    ItemKind::CommandExecution {
        command: "rm -rf x".into(),
        cwd: "/ws".into(),
        process_id: None,
        output: String::new(),
        exit_code,
        duration_ms: None,
    }
}

fn approval(decision: Option<ApprovalDecision>, by: Option<&str>) -> ItemKind {
    ItemKind::Approval {
        approval_id: "ap-1".into(),
        request: ApprovalRequest {
            call_id: "call_1".into(),
            tool: "shell".into(),
            lane: Lane::Execute,
            command: Some("ls".into()),
            cwd: "/ws".into(),
            arguments: json!({"command": "ls"}),
            reason: "`shell` requires confirmation".into(),
            matched_rules: Vec::new(),
            available_decisions: Vec::new(),
            timeout_ms: 500,
            on_timeout: gantry_types::TimeoutAction::Reject,
        },
        decision,
        resolved_by: by.map(|b| match b {
            "client" => ResolvedBy::Client,
            "timeout" => ResolvedBy::Timeout,
            _ => ResolvedBy::Interrupt,
        }),
    }
}

#[test]
fn every_event_carries_its_session_and_time() {
    let out = thread_events(&event(EventPayload::ThreadArchived));
    assert_eq!(kinds(&out), [EventType::SessionDestroyed]);
    assert_eq!(out[0].session_id.as_deref(), Some("t1"));
    assert_eq!(out[0].timestamp, 1_700_000_000_000);
}

#[test]
fn a_turn_ends_completed_with_usage_and_an_interrupt_also_warns() {
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 5,
        ..Usage::default()
    };
    let done = |status, error: Option<&str>| {
        thread_events(&event(EventPayload::TurnCompleted {
            turn_id: TurnId::from("turn-1"),
            status,
            rounds: 2,
            usage,
            cost_usd: 0.0,
            error: error.map(str::to_owned),
            failure: None,
        }))
    };
    let ok = done(TurnStatus::Completed, None);
    assert_eq!(kinds(&ok), [EventType::GenerationCompleted]);
    assert_eq!(ok[0].data["status"], "completed");
    assert_eq!(ok[0].data["total_tokens"], "15");
    let cut = done(TurnStatus::Interrupted, Some("interrupted"));
    assert_eq!(
        kinds(&cut),
        [EventType::GenerationCompleted, EventType::Warning]
    );
    assert_eq!(cut[0].data["status"], "interrupted");
    let failed = done(TurnStatus::Failed, Some("boom"));
    assert_eq!(kinds(&failed), [EventType::GenerationCompleted]);
    assert_eq!(failed[0].data["error"], "boom");
}

#[test]
fn the_engines_internal_tool_calls_make_no_tool_events() {
    // Structured output's `submit_output`: its item starts without a call
    // and ends with an internal one; neither end is the agent's tool use.
    let kind = || ItemKind::StructuredOutput {
        schema_name: None,
        payload: json!({"answer": 42}),
    };
    let started = thread_events(&event(EventPayload::ItemStarted {
        item: item(kind(), ItemStatus::InProgress, None),
    }));
    let mut submitted = item(
        kind(),
        ItemStatus::Completed,
        Some(("submit_output", "accepted")),
    );
    if let Some(call) = &mut submitted.tool_call {
        call.internal = true;
    }
    let ended = thread_events(&event(EventPayload::ItemCompleted { item: submitted }));
    for out in started.iter().chain(&ended) {
        let kind = EventType::try_from(out.r#type).unwrap();
        assert!(
            !matches!(kind, EventType::ToolCalled | EventType::ToolCompleted),
            "{out:?}"
        );
        assert!(!format!("{out:?}").contains("submit_output"), "{out:?}");
    }
}

#[test]
fn tool_calls_start_and_end_with_the_models_call_id() {
    let started = thread_events(&event(EventPayload::ItemStarted {
        item: item(command(None), ItemStatus::InProgress, Some(("shell", ""))),
    }));
    assert_eq!(kinds(&started), [EventType::ToolCalled]);
    let data = &started[0].data;
    assert_eq!(
        (data["tool_id"].as_str(), data["tool_name"].as_str()),
        ("call_1", "bash")
    );
    assert_eq!(data["args"], r#"{"command":"rm -rf x"}"#);

    let ended = thread_events(&event(EventPayload::ItemCompleted {
        item: item(
            command(Some(0)),
            ItemStatus::Completed,
            Some(("shell", "ok\n")),
        ),
    }));
    assert_eq!(kinds(&ended), [EventType::ToolCompleted]);
    let data = &ended[0].data;
    assert_eq!(data["success"], "true");
    assert_eq!(data["exit_code"], "0");
    assert_eq!(data["output_length"], "3");
}

#[test]
fn a_call_the_rules_denied_is_also_a_permission_denial() {
    let reason = "`shell` was not run: denied by permission rule `Bash(rm:*)`";
    let output = format!("error: denied by policy: {reason}");
    let mut denied_item = item(command(None), ItemStatus::Failed, Some(("shell", &output)));
    if let Some(origin) = &mut denied_item.tool_call {
        origin.refused = Some(Refusal::PolicyDenied {
            reason: reason.to_owned(),
            rules: vec!["Bash(rm:*)".to_owned()],
        });
    }
    let ended = thread_events(&event(EventPayload::ItemCompleted { item: denied_item }));
    assert_eq!(
        kinds(&ended),
        [EventType::ToolCompleted, EventType::PermissionDenied]
    );
    assert_eq!(ended[0].data["success"], "false");
    let denied = &ended[1].data;
    assert_eq!(denied["tool_id"], "call_1");
    assert!(denied["reason"].contains("Bash(rm:*)"), "{denied:?}");
    assert_eq!(denied["args"], r#"{"command":"rm -rf x"}"#);

    // A user's denial is a failed call, not a permission denial.
    let user = "error: `shell` was not run: the user denied it";
    let ended = thread_events(&event(EventPayload::ItemCompleted {
        item: item(command(None), ItemStatus::Failed, Some(("shell", user))),
    }));
    assert_eq!(kinds(&ended), [EventType::ToolCompleted]);
}

#[test]
fn confirmations_are_required_then_received_timed_out_or_cancelled() {
    let asked = thread_events(&event(EventPayload::ItemStarted {
        item: item(approval(None, None), ItemStatus::InProgress, None),
    }));
    assert_eq!(kinds(&asked), [EventType::ConfirmationRequired]);
    let data = &asked[0].data;
    assert_eq!(data["tool_id"], "ap-1");
    assert_eq!(data["call_id"], "call_1");
    assert_eq!(data["tool_name"], "bash");
    assert_eq!(data["timeout_ms"], "500");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&data["args"]).unwrap(),
        json!({"command": "ls"})
    );

    let answered = |decision, by, status| {
        thread_events(&event(EventPayload::ItemCompleted {
            item: item(approval(decision, by), status, None),
        }))
    };
    let denied = answered(
        Some(ApprovalDecision::Deny {
            reason: Some("not now".into()),
        }),
        Some("client"),
        ItemStatus::Completed,
    );
    assert_eq!(kinds(&denied), [EventType::ConfirmationReceived]);
    assert_eq!(denied[0].data["approved"], "false");
    assert_eq!(denied[0].data["reason"], "not now");
    let timed_out = answered(
        Some(ApprovalDecision::Approve),
        Some("timeout"),
        ItemStatus::Completed,
    );
    assert_eq!(kinds(&timed_out), [EventType::ConfirmationTimeout]);
    assert_eq!(timed_out[0].data["action_taken"], "auto_approved");
    assert_eq!(timed_out[0].data["tool_id"], "ap-1");
    let cut = answered(None, None, ItemStatus::Interrupted);
    assert_eq!(kinds(&cut), [EventType::Warning]);
}

#[test]
fn an_external_call_is_a_tool_call_and_a_task() {
    let task = |error: Option<&str>, status| {
        item(
            ItemKind::ExternalTask {
                task_id: "task-1".into(),
                lane: Lane::Execute,
                tool: "shell".into(),
                mode: HandlerMode::External,
                payload: json!({"command": "make"}),
                timeout_ms: 1000,
                result: error.is_none().then(|| "built".to_owned()),
                error: error.map(str::to_owned),
            },
            status,
            Some(("shell", "built")),
        )
    };
    let started = thread_events(&event(EventPayload::ItemStarted {
        item: task(None, ItemStatus::InProgress),
    }));
    assert_eq!(
        kinds(&started),
        [EventType::ToolCalled, EventType::ExternalTaskPending]
    );
    let pending = &started[1].data;
    assert_eq!(pending["task_id"], "task-1");
    assert_eq!(pending["lane"], "execute");
    assert_eq!(pending["command_type"], "bash");
    assert_eq!(pending["payload"], r#"{"command":"make"}"#);
    assert_eq!(pending["timeout_ms"], "1000");
    let ended = thread_events(&event(EventPayload::ItemCompleted {
        item: task(Some("no"), ItemStatus::Failed),
    }));
    assert_eq!(
        kinds(&ended),
        [EventType::ToolCompleted, EventType::ExternalTaskCompleted]
    );
    assert_eq!(ended[1].data["success"], "false");
}

#[test]
fn errors_state_changes_and_text_map_to_error_info_or_nothing() {
    let error = thread_events(&event(EventPayload::ItemCompleted {
        item: item(
            ItemKind::Error {
                message: "model server said 400".into(),
            },
            ItemStatus::Completed,
            None,
        ),
    }));
    assert_eq!(kinds(&error), [EventType::Error]);
    assert_eq!(error[0].message, "model server said 400");
    let paused = thread_events(&event(EventPayload::ThreadPaused));
    assert_eq!(kinds(&paused), [EventType::Info]);
    assert_eq!(paused[0].data["event"], "session_paused");
    let text = thread_events(&event(EventPayload::ItemCompleted {
        item: item(
            ItemKind::AgentMessage { text: "hi".into() },
            ItemStatus::Completed,
            None,
        ),
    }));
    assert!(text.is_empty());
}

#[test]
fn memory_events_have_their_own_types_and_others_are_info() {
    let memory = MemoryItem {
        id: "m1".into(),
        content: "the build uses make".into(),
        timestamp: 1,
        importance: 0.5,
        tags: vec!["build".into()],
        memory_type: MemoryType::Semantic,
        metadata: Default::default(),
        access_count: 0,
        last_accessed: None,
        scope: MemoryScope::Thread(ThreadId::from("t1")),
    };
    let stored = engine_event(&EngineEvent {
        seq: 1,
        ts: 5,
        thread_id: Some(ThreadId::from("t1")),
        kind: EngineEventKind::Memory(MemoryEvent::Stored { memory }),
    });
    assert_eq!(stored.r#type, EventType::MemoryStored as i32);
    assert_eq!(stored.session_id.as_deref(), Some("t1"));
    assert_eq!(stored.data["memory_id"], "m1");
    assert_eq!(stored.data["content"], "the build uses make");
    let deleted = engine_event(&EngineEvent {
        seq: 1,
        ts: 5,
        thread_id: None,
        kind: EngineEventKind::AgentDeleted {
            agent_id: "a1".into(),
        },
    });
    assert_eq!(deleted.r#type, EventType::Info as i32);
    assert_eq!(deleted.session_id, None);
    assert_eq!(deleted.data["agent_id"], "a1");
}

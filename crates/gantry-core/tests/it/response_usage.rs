//! What the engine records while a turn runs, for clients that report a
//! turn piece by piece (CompanyHelm's runner protocol among them): each
//! model response's usage as an event of its own, and a command's pid as
//! its item's update as soon as its process started.

use crate::common;

use common::*;
use gantry_testkit::{Step, UsageSpec};
use gantry_types::{EventPayload, ItemKind, TurnStatus, Usage};
use serde_json::json;

fn usage(prompt: u64, completion: u64) -> UsageSpec {
    UsageSpec {
        prompt_tokens: prompt,
        completion_tokens: completion,
        ..UsageSpec::default()
    }
}

#[tokio::test]
async fn each_model_response_records_its_usage_after_its_items_and_before_its_tools() {
    let h = Harness::new(vec![
        Step::tool_call("shell", json!({"command": "echo hi"})).with_usage(usage(100, 10)),
        Step::text("Done.").with_usage(usage(150, 20)),
    ])
    .await;
    let (turn, seen) = h.run_turn("say hi").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let events = events(&seen);
    let responded: Vec<(u32, u64, u64, Option<u64>)> = events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ModelResponded {
                turn_id,
                round,
                usage,
                context_window,
                ..
            } => {
                assert_eq!(turn_id, &turn);
                assert_eq!(e.turn_id.as_ref(), Some(&turn), "its turn is its subject");
                Some((
                    *round,
                    usage.input_tokens,
                    usage.output_tokens,
                    *context_window,
                ))
            }
            _ => None,
        })
        .collect();
    // The scripted model is no model the catalog knows: no window.
    assert_eq!(responded, [(1, 100, 10, None), (2, 150, 20, None)]);
    let names: Vec<&str> = events.iter().map(|e| e.payload.name()).collect();
    let first = names.iter().position(|n| *n == "model_responded").unwrap();
    let command = events
        .iter()
        .position(|e| {
            matches!(&e.payload, EventPayload::ItemStarted { item }
                if matches!(item.kind, ItemKind::CommandExecution { .. }))
        })
        .unwrap();
    assert!(
        first < command,
        "the first response's usage before its command: {names:?}"
    );
    // The responses sum to the turn's usage, which the view keeps.
    let view = h.view().await;
    let whole = Usage {
        input_tokens: 250,
        output_tokens: 30,
        ..Usage::default()
    };
    assert_eq!(view.turns[0].turn.usage, whole);
}

#[tokio::test]
async fn each_model_response_records_who_answered() {
    let h = Harness::new(vec![
        Step::tool_call("shell", json!({"command": "true"})).with_model("test-model-2025"),
        Step::text("Done.").with_model("test-model-2025"),
    ])
    .await;
    let (_, seen) = h.run_turn("go").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let answered: Vec<(Option<String>, Option<String>)> = events(&seen)
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ModelResponded {
                call: Some(call), ..
            } => Some((call.response_id.clone(), call.response_model.clone())),
            _ => None,
        })
        .collect();
    // As the scripted server names its answers, not the model asked for.
    let named = |n: u32| {
        (
            Some(format!("chatcmpl-gantry{n}")),
            Some("test-model-2025".to_owned()),
        )
    };
    assert_eq!(answered, [named(1), named(2)]);
    assert_eq!(h.llm.requests()[0].body["model"], "test-model");
}

#[tokio::test]
async fn a_commands_pid_is_its_items_update_as_soon_as_its_process_started() {
    let h = Harness::new(vec![
        Step::tool_call("shell", json!({"command": "echo $$"})),
        Step::text("Done."),
    ])
    .await;
    let (_, seen) = h.run_turn("which pid").await;
    let events = events(&seen);
    let command_events: Vec<(&str, Option<u32>)> = events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ItemStarted { item }
            | EventPayload::ItemUpdated { item }
            | EventPayload::ItemCompleted { item } => match &item.kind {
                ItemKind::CommandExecution { process_id, .. } => {
                    Some((e.payload.name(), *process_id))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    let [
        ("item_started", None),
        ("item_updated", Some(pid)),
        ("item_completed", Some(ended)),
    ] = command_events[..]
    else {
        panic!("started, updated with its pid, completed: {command_events:?}");
    };
    assert_eq!(pid, ended);
    assert!(pid > 1, "an OS pid: {pid}");
}

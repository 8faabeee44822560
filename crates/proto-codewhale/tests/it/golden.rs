//! Golden tests against the real crate (`codewhale-protocol` =0.8.59, a
//! dev-dependency only): every request a client sends reads the same in
//! Gantry's types and the crate's, and what Gantry writes is what the
//! crate writes. `session.rs` does the same for every answer and frame a
//! real session emits.

use codewhale_protocol as real;
use proto_codewhale::wire;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// `json` read by Gantry's `O` and the crate's `R` writes back the same,
/// from both.
fn same_both_ways<O, R>(json: Value)
where
    O: Serialize + DeserializeOwned,
    R: Serialize + DeserializeOwned,
{
    let ours: O = serde_json::from_value(json.clone())
        .unwrap_or_else(|e| panic!("Gantry cannot read {json}: {e}"));
    let theirs: R = serde_json::from_value(json.clone())
        .unwrap_or_else(|e| panic!("the crate cannot read {json}: {e}"));
    let ours = serde_json::to_value(ours).expect("ours writes");
    let theirs = serde_json::to_value(theirs).expect("theirs writes");
    assert_eq!(ours, theirs, "written differently after reading {json}");
}

/// What Gantry writes of `value`, read by the crate's `R` and written
/// again, is unchanged.
pub(crate) fn round_trips<R: Serialize + DeserializeOwned>(value: &impl Serialize) {
    let ours = serde_json::to_value(value).expect("ours writes");
    let theirs: R = serde_json::from_value(ours.clone())
        .unwrap_or_else(|e| panic!("the crate cannot read Gantry's {ours}: {e}"));
    let again = serde_json::to_value(theirs).expect("theirs writes");
    assert_eq!(again, ours, "the crate changed Gantry's JSON");
}

#[test]
fn the_canonical_json_of_the_real_crate() {
    let cases = [
        (
            json!({"kind": "create"}),
            json!({"kind": "create", "metadata": null}),
        ),
        (
            json!({"kind": "list"}),
            json!({"kind": "list", "include_archived": false}),
        ),
    ];
    for (input, canonical) in cases {
        let ours: wire::ThreadRequest = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(serde_json::to_value(&ours).unwrap(), canonical);
        let theirs: real::ThreadRequest = serde_json::from_value(input).unwrap();
        assert_eq!(serde_json::to_value(&theirs).unwrap(), canonical);
    }
    let text = wire::EventFrame::ResponseDelta {
        response_id: "r".into(),
        delta: "d".into(),
        channel: wire::ResponseChannel::Text,
    };
    assert_eq!(
        serde_json::to_value(&text).unwrap(),
        json!({"event": "response_delta", "response_id": "r", "delta": "d"})
    );
    let reasoning = wire::EventFrame::ResponseDelta {
        response_id: "r".into(),
        delta: "d".into(),
        channel: wire::ResponseChannel::Reasoning,
    };
    round_trips::<real::EventFrame>(&reasoning);
    assert_eq!(
        serde_json::to_value(&reasoning).unwrap()["channel"],
        "reasoning"
    );
    // An envelope without a thread has no `thread_id`: the crate's own
    // behaviour, which Gantry's bodies never wrap (no transport uses it).
    let envelope = real::Envelope {
        request_id: "1".into(),
        thread_id: None,
        body: json!({}),
    };
    assert!(
        serde_json::to_value(&envelope)
            .unwrap()
            .get("thread_id")
            .is_none()
    );
}

#[test]
fn every_thread_request_reads_alike() {
    let requests = [
        json!({"kind": "create", "metadata": {"origin": "ide"}}),
        json!({"kind": "start"}),
        json!({"kind": "start", "model": "m", "model_provider": "p", "cwd": "/w",
               "persist_extended_history": true}),
        json!({"kind": "resume", "thread_id": "t"}),
        json!({"kind": "resume", "thread_id": "t", "history": [{"a": 1}], "path": "/p",
               "model": "m", "model_provider": "p", "cwd": "/w", "approval_policy": "on-request",
               "sandbox": "workspace-write", "config": {"x": 1}, "base_instructions": "b",
               "developer_instructions": "d", "personality": "p",
               "persist_extended_history": true}),
        json!({"kind": "fork", "thread_id": "t"}),
        json!({"kind": "fork", "thread_id": "t", "path": "/p", "model": "m",
               "model_provider": "p", "cwd": "/w", "approval_policy": "never",
               "sandbox": "read-only", "config": null, "base_instructions": "b",
               "developer_instructions": "d", "persist_extended_history": false}),
        json!({"kind": "list", "include_archived": true, "limit": 20}),
        json!({"kind": "read", "thread_id": "t"}),
        json!({"kind": "set_name", "thread_id": "t", "name": "n"}),
        json!({"kind": "goal_set", "thread_id": "t", "objective": "o", "token_budget": 42000}),
        json!({"kind": "goal_set", "thread_id": "t", "objective": "o"}),
        json!({"kind": "goal_get", "thread_id": "t"}),
        json!({"kind": "goal_clear", "thread_id": "t"}),
        json!({"kind": "archive", "thread_id": "t"}),
        json!({"kind": "unarchive", "thread_id": "t"}),
        json!({"kind": "message", "thread_id": "t", "input": "hi"}),
    ];
    for request in requests {
        same_both_ways::<wire::ThreadRequest, real::ThreadRequest>(request);
    }
}

#[test]
fn every_app_prompt_and_approval_request_reads_alike() {
    for request in [
        json!({"kind": "capabilities"}),
        json!({"kind": "config_get", "key": "model"}),
        json!({"kind": "config_set", "key": "model", "value": "m"}),
        json!({"kind": "config_unset", "key": "model"}),
        json!({"kind": "config_list"}),
        json!({"kind": "models"}),
        json!({"kind": "thread_loaded_list"}),
    ] {
        same_both_ways::<wire::AppRequest, real::AppRequest>(request);
    }
    same_both_ways::<wire::PromptRequest, real::PromptRequest>(json!({"prompt": "p"}));
    same_both_ways::<wire::PromptRequest, real::PromptRequest>(
        json!({"thread_id": "t", "prompt": "p", "model": "m"}),
    );
    for decision in [
        json!({"decision": "approved"}),
        json!({"decision": "denied", "remember": true}),
    ] {
        same_both_ways::<wire::ApprovalDecisionRequest, real::ApprovalDecisionRequest>(decision);
    }
    for decision in [
        json!({"type": "approved"}),
        json!({"type": "approved_execpolicy_amendment"}),
        json!({"type": "approved_for_session"}),
        json!({"type": "network_policy_amendment", "host": "h", "action": "allow"}),
        json!({"type": "denied"}),
        json!({"type": "abort"}),
    ] {
        same_both_ways::<wire::ReviewDecision, real::ReviewDecision>(decision);
    }
    for policy in [
        json!("unless_trusted"),
        json!("on_failure"),
        json!("on_request"),
        json!("never"),
        json!({"reject": {"sandbox_approval": true, "rules": false, "mcp_elicitations": true}}),
    ] {
        same_both_ways::<wire::AskForApproval, real::AskForApproval>(policy);
    }
}

#[test]
fn frames_gantry_never_makes_from_a_session_still_match() {
    // Kinds a scripted session does not reach (MCP, elicitations).
    let frames = [
        json!({"event": "mcp_startup_update",
               "update": {"server_name": "s", "status": {"failed": {"error": "e"}}}}),
        json!({"event": "mcp_startup_update", "update": {"server_name": "s", "status": "ready"}}),
        json!({"event": "mcp_startup_complete", "summary": {"ready": ["a"],
               "failed": [{"server_name": "b", "error": "e"}], "cancelled": ["c"]}}),
        json!({"event": "mcp_tool_call_begin", "server_name": "s", "tool_name": "t"}),
        json!({"event": "mcp_tool_call_end", "server_name": "s", "tool_name": "t", "ok": true}),
        json!({"event": "elicitation_request", "server_name": "s", "request_id": "r",
               "prompt": "p"}),
        json!({"event": "apply_patch_approval_request", "request": {"call_id": "c",
               "approval_id": "a", "turn_id": "t", "command": "write_file {}", "cwd": "/w",
               "reason": "r", "matched_rule": "Write(*)",
               "network_approval_context": {"host": "h", "protocol": "https"},
               "proposed_execpolicy_amendment": ["x"],
               "proposed_network_policy_amendments": [{"host": "h", "action": "deny"}],
               "additional_permissions": ["p"],
               "available_decisions": [{"type": "approved"}, {"type": "abort"}]}}),
        json!({"event": "turn_aborted", "turn_id": "t", "reason": "interrupted"}),
        json!({"event": "error", "response_id": "r", "message": "m"}),
    ];
    for frame in frames {
        same_both_ways::<wire::EventFrame, real::EventFrame>(frame);
    }
}

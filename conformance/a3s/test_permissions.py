"""Permission rules: a deny rule reported as PERMISSION_DENIED; set, get,
check and add; bad input."""

import json

import grpc

from conftest import HANG_GUARD, code_of


def shell(command):
    return {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}}


def rules(pb, *names):
    return [pb.PermissionRule(rule=r) for r in names]


def test_a_deny_rule_stops_the_call_and_is_reported(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([shell("rm -f keep.txt"), {"reply": {"text": "could not"}}])
    (gantry.workspace / "keep.txt").write_text("precious")
    session = gantry.session(llm)
    added = stub.AddPermissionRule(
        pb.AddPermissionRuleRequest(session_id=session, rule_type="deny", rule="Bash(rm:*)"), timeout=HANG_GUARD
    )
    assert added.success
    stream = stub.SubscribeEvents(
        pb.SubscribeEventsRequest(session_id=session, event_types=["permission_denied"]), timeout=4 * HANG_GUARD
    )
    stream.initial_metadata()
    response = stub.Generate(
        pb.GenerateRequest(session_id=session, messages=[pb.Message(role="user", content="clean up")]),
        timeout=HANG_GUARD,
    )
    denied = next(stream)
    stream.cancel()
    assert denied.type == pb.AgentEvent.EVENT_TYPE_PERMISSION_DENIED
    assert denied.data["tool_id"] == response.tool_calls[0].id
    assert denied.data["tool_name"] == "bash"
    assert json.loads(denied.data["args"])["command"] == "rm -f keep.txt"
    assert "Bash(rm:*)" in denied.data["reason"]
    assert (gantry.workspace / "keep.txt").exists()
    assert not response.tool_calls[0].result.success


def test_a_policy_is_set_read_and_checked(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([]))
    policy = pb.PermissionPolicy(
        enabled=True,
        allow=rules(pb, "Bash(cargo:*)"),
        ask=rules(pb, "Bash(git push:*)"),
        deny=rules(pb, "Read(secrets/**)"),
        default_decision=pb.PERMISSION_DECISION_ASK,
    )
    set_ = stub.SetPermissionPolicy(pb.SetPermissionPolicyRequest(session_id=session, policy=policy), timeout=HANG_GUARD)
    assert set_.success and set_.policy == policy
    assert stub.GetPermissionPolicy(pb.GetPermissionPolicyRequest(session_id=session), timeout=HANG_GUARD).policy == policy

    def check(tool, args):
        return stub.CheckPermission(
            pb.CheckPermissionRequest(session_id=session, tool_name=tool, arguments=json.dumps(args)), timeout=HANG_GUARD
        )

    allowed = check("shell", {"command": "cargo test"})
    assert allowed.decision == pb.PERMISSION_DECISION_ALLOW and list(allowed.matching_rules) == ["Bash(cargo:*)"]
    assert check("shell", {"command": "git push"}).decision == pb.PERMISSION_DECISION_ASK
    assert check("read_file", {"path": "secrets/a"}).decision == pb.PERMISSION_DECISION_DENY
    stub.AddPermissionRule(pb.AddPermissionRuleRequest(session_id=session, rule_type="allow", rule="Bash(ls)"), timeout=HANG_GUARD)
    assert check("shell", {"command": "ls"}).decision == pb.PERMISSION_DECISION_ALLOW


def test_bad_permission_input_is_refused(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([]))
    code, details = code_of(
        lambda: stub.CheckPermission(
            pb.CheckPermissionRequest(session_id=session, tool_name="mcp__fs__read", arguments="{not json"), timeout=HANG_GUARD
        )
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("arguments")
    code, details = code_of(
        lambda: stub.AddPermissionRule(
            pb.AddPermissionRuleRequest(session_id=session, rule_type="deny", rule="Bash(rm:*"), timeout=HANG_GUARD
        )
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("rule:")
    code, details = code_of(
        lambda: stub.AddPermissionRule(
            pb.AddPermissionRuleRequest(session_id=session, rule_type="block", rule="Bash"), timeout=HANG_GUARD
        )
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("rule_type")
    code, details = code_of(
        lambda: stub.SetPermissionPolicy(pb.SetPermissionPolicyRequest(session_id=session), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("policy")
    code, _ = code_of(
        lambda: stub.GetPermissionPolicy(pb.GetPermissionPolicyRequest(session_id="nope"), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.NOT_FOUND

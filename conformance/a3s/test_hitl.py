"""Human in the loop: a confirmation announced on SubscribeEvents while a
Generate waits, answered with ConfirmToolExecution; the policy rpcs."""

import concurrent.futures
import json

import grpc

from conftest import HANG_GUARD, code_of


def shell(command):
    return {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}}


def ask(pb, session_id, text):
    return pb.GenerateRequest(session_id=session_id, messages=[pb.Message(role="user", content=text)])


def confirm_shell(pb):
    return pb.ConfirmationPolicy(
        enabled=True,
        require_confirm_tools=["shell"],
        default_timeout_ms=30_000,
        timeout_action=pb.TIMEOUT_ACTION_REJECT,
        yolo_lanes=[pb.SESSION_LANE_QUERY],
    )


def subscribe(gantry, session_id):
    request = gantry.pb.SubscribeEventsRequest(
        session_id=session_id, event_types=["confirmation_required", "confirmation_received"]
    )
    stream = gantry.stub.SubscribeEvents(request, timeout=4 * HANG_GUARD)
    stream.initial_metadata()
    return stream


def test_a_confirmation_is_announced_approved_and_the_command_runs(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([shell("echo approved-run"), {"reply": {"text": "it ran"}}])
    session = gantry.session(llm)
    set_ = stub.SetConfirmationPolicy(
        pb.SetConfirmationPolicyRequest(session_id=session, policy=confirm_shell(pb)), timeout=HANG_GUARD
    )
    assert set_.success and set_.policy == confirm_shell(pb)
    got = stub.GetConfirmationPolicy(pb.GetConfirmationPolicyRequest(session_id=session), timeout=HANG_GUARD)
    assert got.policy == confirm_shell(pb)

    stream = subscribe(gantry, session)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answer = pool.submit(stub.Generate, ask(pb, session, "run it"), timeout=2 * HANG_GUARD)
        asked = next(stream)
        assert asked.type == pb.AgentEvent.EVENT_TYPE_CONFIRMATION_REQUIRED
        assert asked.data["tool_name"] == "bash" and asked.data["call_id"] == "call_1"
        assert json.loads(asked.data["args"])["command"] == "echo approved-run"
        assert not answer.done(), "the generation waits for the answer"
        confirmed = stub.ConfirmToolExecution(
            pb.ConfirmToolExecutionRequest(session_id=session, tool_id=asked.data["tool_id"], approved=True),
            timeout=HANG_GUARD,
        )
        assert confirmed.success and not confirmed.error
        response = answer.result(timeout=HANG_GUARD)
    received = next(stream)
    assert received.type == pb.AgentEvent.EVENT_TYPE_CONFIRMATION_RECEIVED
    assert received.data["approved"] == "true"
    assert response.message.content == "it ran"
    assert "approved-run" in response.tool_calls[0].result.output
    stream.cancel()

    code, details = code_of(
        lambda: stub.ConfirmToolExecution(
            pb.ConfirmToolExecutionRequest(session_id=session, tool_id=asked.data["tool_id"], approved=True),
            timeout=HANG_GUARD,
        )
    )
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "already resolved" in details


def test_a_denial_tells_the_model_and_nothing_runs(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([shell("touch should-not-exist"), {"reply": {"text": "understood"}}])
    session = gantry.session(llm)
    stub.SetConfirmationPolicy(
        pb.SetConfirmationPolicyRequest(session_id=session, policy=confirm_shell(pb)), timeout=HANG_GUARD
    )
    stream = subscribe(gantry, session)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answer = pool.submit(stub.Generate, ask(pb, session, "touch it"), timeout=2 * HANG_GUARD)
        asked = next(stream)
        # Answered by the model's call id.
        stub.ConfirmToolExecution(
            pb.ConfirmToolExecutionRequest(
                session_id=session, tool_id=asked.data["call_id"], approved=False, reason="not on a Friday"
            ),
            timeout=HANG_GUARD,
        )
        response = answer.result(timeout=HANG_GUARD)
    stream.cancel()
    assert response.message.content == "understood"
    assert not response.tool_calls[0].result.success
    assert not (gantry.workspace / "should-not-exist").exists()
    assert "the user denied it: not on a Friday" in json.dumps(llm.requests()[1]["body"])


def test_bad_confirmations_and_policies_are_refused(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([]))
    # As A3S answers an unknown confirmation: success=false with the reason.
    unknown = stub.ConfirmToolExecution(
        pb.ConfirmToolExecutionRequest(session_id=session, tool_id="nope", approved=True), timeout=HANG_GUARD
    )
    assert not unknown.success and "nope" in unknown.error
    code, details = code_of(
        lambda: stub.ConfirmToolExecution(pb.ConfirmToolExecutionRequest(session_id=session), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "tool_id" in details
    code, details = code_of(
        lambda: stub.SetConfirmationPolicy(pb.SetConfirmationPolicyRequest(session_id=session), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "policy" in details
    code, details = code_of(
        lambda: stub.SetConfirmationPolicy(
            pb.SetConfirmationPolicyRequest(
                session_id=session, policy=pb.ConfirmationPolicy(yolo_lanes=[pb.SESSION_LANE_UNKNOWN])
            ),
            timeout=HANG_GUARD,
        )
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "yolo_lanes[0]" in details
    code, _ = code_of(
        lambda: stub.GetConfirmationPolicy(pb.GetConfirmationPolicyRequest(session_id="nope"), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.NOT_FOUND
    defaults = stub.GetConfirmationPolicy(pb.GetConfirmationPolicyRequest(session_id=session), timeout=HANG_GUARD)
    assert not defaults.policy.enabled and defaults.policy.default_timeout_ms == 30_000

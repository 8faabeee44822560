"""SubscribeEvents: what happens from the moment of subscribing, filtered."""

import concurrent.futures
import json

import grpc

from conftest import HANG_GUARD, code_of


def shell(command):
    return {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}}


def subscribe(gantry, session_id=None, types=()):
    """An event stream, open (its subscription made) when this returns."""
    request = gantry.pb.SubscribeEventsRequest(event_types=list(types))
    if session_id is not None:
        request.session_id = session_id
    stream = gantry.stub.SubscribeEvents(request, timeout=4 * HANG_GUARD)
    stream.initial_metadata()
    return stream


def ask(pb, session_id, text):
    return pb.GenerateRequest(session_id=session_id, messages=[pb.Message(role="user", content=text)])


def test_a_subscriber_follows_a_new_session_its_generation_and_tools(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([shell("echo from-the-tool"), {"reply": {"text": "All done."}}])
    earlier = gantry.session(llm)
    stream = subscribe(gantry)
    session = gantry.session(llm)
    E = pb.AgentEvent

    created = next(stream)
    assert created.type == E.EVENT_TYPE_SESSION_CREATED, created
    assert created.session_id == session != earlier
    assert created.timestamp > 1_600_000_000_000

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answer = pool.submit(stub.Generate, ask(pb, session, "run it"), timeout=HANG_GUARD)
        seen = []
        for event in stream:
            seen.append(event)
            if event.type == E.EVENT_TYPE_GENERATION_COMPLETED:
                break
        response = answer.result(timeout=HANG_GUARD)
    kinds = [e.type for e in seen if e.type != E.EVENT_TYPE_INFO]
    assert kinds == [
        E.EVENT_TYPE_GENERATION_STARTED,
        E.EVENT_TYPE_TOOL_CALLED,
        E.EVENT_TYPE_TOOL_COMPLETED,
        E.EVENT_TYPE_GENERATION_COMPLETED,
    ], seen
    called, completed, done = seen[1], seen[2], seen[3]
    assert called.data["tool_id"] == response.tool_calls[0].id
    assert called.data["tool_name"] == "bash"
    assert json.loads(called.data["args"])["command"] == "echo from-the-tool"
    assert completed.data["success"] == "true" and completed.data["exit_code"] == "0"
    assert int(completed.data["output_length"]) > 0
    assert done.data["status"] == "completed"
    assert done.data["total_tokens"] == str(response.usage.total_tokens)

    stub.DestroySession(pb.DestroySessionRequest(session_id=session), timeout=HANG_GUARD)
    destroyed = next(stream)
    assert destroyed.type == E.EVENT_TYPE_SESSION_DESTROYED and destroyed.session_id == session
    stream.cancel()


def test_a_session_filter_and_type_filter_narrow_the_stream(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([{"reply": {"text": "other"}}, {"reply": {"text": "mine"}}])
    mine, other = gantry.session(llm), gantry.session(llm)
    stream = subscribe(gantry, mine, ["generation_completed", "EVENT_TYPE_ERROR"])
    stub.Generate(ask(pb, other, "first"), timeout=HANG_GUARD)
    stub.Generate(ask(pb, mine, "second"), timeout=HANG_GUARD)
    event = next(stream)
    assert event.type == pb.AgentEvent.EVENT_TYPE_GENERATION_COMPLETED
    assert event.session_id == mine
    stream.cancel()


def test_unknown_event_types_and_sessions_are_refused(gantry):
    pb, stub = gantry.pb, gantry.stub
    code, details = code_of(
        lambda: next(stub.SubscribeEvents(pb.SubscribeEventsRequest(event_types=["tool_called", "tool_exploded"]), timeout=HANG_GUARD))
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "tool_exploded" in details
    code, _ = code_of(
        lambda: next(stub.SubscribeEvents(pb.SubscribeEventsRequest(session_id="no-such-session"), timeout=HANG_GUARD))
    )
    assert code == grpc.StatusCode.NOT_FOUND

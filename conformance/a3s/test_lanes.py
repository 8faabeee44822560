"""Lane handlers: a lane handed to the client, its tasks seen on
SubscribeEvents, listed and completed; the handler rpcs and bad input."""

import concurrent.futures
import json

import grpc

from conftest import HANG_GUARD, code_of


def shell(command):
    return {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}}


def ask(pb, session_id, text):
    return pb.GenerateRequest(session_id=session_id, messages=[pb.Message(role="user", content=text)])


def test_an_external_lane_is_completed_by_the_client(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([shell("make release"), {"reply": {"text": "built"}}])
    session = gantry.session(llm)
    external = pb.LaneHandlerConfig(mode=pb.TASK_HANDLER_MODE_EXTERNAL, timeout_ms=30_000)
    set_ = stub.SetLaneHandler(
        pb.SetLaneHandlerRequest(session_id=session, lane=pb.SESSION_LANE_EXECUTE, config=external),
        timeout=HANG_GUARD,
    )
    assert set_.success and set_.config == external
    got = stub.GetLaneHandler(pb.GetLaneHandlerRequest(session_id=session, lane=pb.SESSION_LANE_EXECUTE), timeout=HANG_GUARD)
    assert got.config == external
    default = stub.GetLaneHandler(pb.GetLaneHandlerRequest(session_id=session, lane=pb.SESSION_LANE_QUERY), timeout=HANG_GUARD)
    assert default.config.mode == pb.TASK_HANDLER_MODE_INTERNAL

    stream = stub.SubscribeEvents(
        pb.SubscribeEventsRequest(session_id=session, event_types=["external_task_pending", "external_task_completed"]),
        timeout=4 * HANG_GUARD,
    )
    stream.initial_metadata()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answer = pool.submit(stub.Generate, ask(pb, session, "build it"), timeout=2 * HANG_GUARD)
        task = next(stream)
        assert task.type == pb.AgentEvent.EVENT_TYPE_EXTERNAL_TASK_PENDING
        assert task.data["lane"] == "execute" and task.data["command_type"] == "bash"
        assert json.loads(task.data["payload"])["command"] == "make release"
        pending = stub.ListPendingExternalTasks(pb.ListPendingExternalTasksRequest(session_id=session), timeout=HANG_GUARD)
        assert [t.task_id for t in pending.tasks] == [task.data["task_id"]]
        listed = pending.tasks[0]
        assert listed.lane == pb.SESSION_LANE_EXECUTE and listed.command_type == "bash"
        assert 0 < listed.remaining_ms <= listed.timeout_ms == 30_000
        done = stub.CompleteExternalTask(
            pb.CompleteExternalTaskRequest(
                session_id=session, task_id=task.data["task_id"], success=True, result="built by the client"
            ),
            timeout=HANG_GUARD,
        )
        assert done.success
        response = answer.result(timeout=HANG_GUARD)
    completed = next(stream)
    stream.cancel()
    assert completed.type == pb.AgentEvent.EVENT_TYPE_EXTERNAL_TASK_COMPLETED
    assert completed.data["success"] == "true"
    assert response.tool_calls[0].result.output == "built by the client"
    assert "built by the client" in json.dumps(llm.requests()[1]["body"])
    assert not stub.ListPendingExternalTasks(pb.ListPendingExternalTasksRequest(session_id=session), timeout=HANG_GUARD).tasks
    code, _ = code_of(
        lambda: stub.CompleteExternalTask(
            pb.CompleteExternalTaskRequest(session_id=session, task_id=task.data["task_id"], success=True),
            timeout=HANG_GUARD,
        )
    )
    assert code == grpc.StatusCode.FAILED_PRECONDITION


def test_bad_lane_requests_are_refused(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([]))
    code, details = code_of(
        lambda: stub.SetLaneHandler(
            pb.SetLaneHandlerRequest(
                session_id=session, lane=pb.SESSION_LANE_UNKNOWN, config=pb.LaneHandlerConfig(mode=pb.TASK_HANDLER_MODE_EXTERNAL)
            ),
            timeout=HANG_GUARD,
        )
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("lane")
    code, details = code_of(
        lambda: stub.SetLaneHandler(
            pb.SetLaneHandlerRequest(session_id=session, lane=pb.SESSION_LANE_EXECUTE, config=pb.LaneHandlerConfig()),
            timeout=HANG_GUARD,
        )
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("config.mode")
    code, _ = code_of(
        lambda: stub.GetLaneHandler(pb.GetLaneHandlerRequest(session_id=session), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    code, _ = code_of(
        lambda: stub.CompleteExternalTask(
            pb.CompleteExternalTaskRequest(session_id=session, task_id="nope", success=True), timeout=HANG_GUARD
        )
    )
    assert code == grpc.StatusCode.NOT_FOUND
    code, _ = code_of(
        lambda: stub.ListPendingExternalTasks(pb.ListPendingExternalTasksRequest(session_id="nope"), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.NOT_FOUND

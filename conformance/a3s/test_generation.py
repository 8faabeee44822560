"""Generation and control: Generate, StreamGenerate, the structured pair,
Cancel during a stream, Pause/Resume, and the errors."""

import json

import grpc

from conftest import HANG_GUARD, code_of


def ask(pb, session, text):
    return pb.GenerateRequest(session_id=session, messages=[pb.Message(role="user", content=text)])


def shell(command, text=""):
    return {"reply": {"text": text, "tool_calls": [{"name": "shell", "arguments": {"command": command}}]}}


def test_generate_runs_a_turn_with_tools(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([shell("echo from-python"), {"reply": {"text": "Done."}}])
    session = gantry.session(llm, system_prompt="Be terse.")
    answer = stub.Generate(ask(pb, session, "run it"), timeout=HANG_GUARD)
    assert answer.message.role == "assistant" and answer.message.content == "Done."
    assert answer.finish_reason == "stop"
    [call] = answer.tool_calls
    assert call.name == "bash" and json.loads(call.arguments)["command"] == "echo from-python"
    assert call.result.success and "from-python" in call.result.output
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens > 0
    # The session's own server got the request, the A3S way (no /v1 given).
    sent = llm.requests()[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == "Bearer sk-test"
    assert sent["body"]["messages"][0]["content"] == "Be terse."


def test_stream_generate_streams_then_says_done(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([shell("echo hi", "Looking. "), {"reply": {"text": "It said hi.", "chunk_size": 3}}])
    session = gantry.session(llm)
    chunks = list(stub.StreamGenerate(ask(pb, session, "look"), timeout=HANG_GUARD))
    kinds = [c.type for c in chunks]
    assert kinds[-1] == "done", kinds
    assert kinds.index("tool_call") < kinds.index("tool_result"), kinds
    after = kinds.index("tool_result")
    assert "".join(c.content for c in chunks[after:] if c.type == "content") == "It said hi."
    assert chunks[-1].content == "It said hi." and chunks[-1].finish_reason == "stop"
    assert all(c.session_id == session for c in chunks)


def test_structured_output_whole_and_streamed(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    submit = lambda args: {"reply": {"tool_calls": [{"name": "submit_output", "arguments": args}]}}
    llm = mock_llm([submit({"n": 1}), submit({"n": 2})])
    session = gantry.session(llm)
    schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    request = pb.GenerateStructuredRequest(
        session_id=session, messages=[pb.Message(role="user", content="count")], schema=schema
    )
    whole = stub.GenerateStructured(request, timeout=HANG_GUARD)
    assert json.loads(whole.data) == {"n": 1}
    chunks = list(stub.StreamGenerateStructured(request, timeout=HANG_GUARD))
    assert chunks[-1].done and json.loads(chunks[-1].data) == {"n": 2}
    bad = pb.GenerateStructuredRequest(session_id=session, messages=request.messages, schema="{nope")
    code, details = code_of(lambda: stub.GenerateStructured(bad, timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "schema" in details


def test_cancel_during_a_stream(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    slow = {"reply": {"text": "a slow answer " * 20, "chunk_size": 2, "delay_ms": 30}}
    llm = mock_llm([slow, {"reply": {"text": "after"}}])
    session = gantry.session(llm)
    stream = stub.StreamGenerate(ask(pb, session, "talk"), timeout=HANG_GUARD)
    for chunk in stream:
        if chunk.type == "content":
            break
    assert stub.Cancel(pb.CancelRequest(session_id=session), timeout=HANG_GUARD).success
    code, _ = code_of(lambda: [c for c in stream])
    assert code == grpc.StatusCode.CANCELLED
    assert stub.Generate(ask(pb, session, "again"), timeout=HANG_GUARD).message.content == "after"


def test_pause_resume_and_generation_errors(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([{"reply": {"text": "resumed"}}])
    session = gantry.session(llm)
    assert stub.Pause(pb.PauseRequest(session_id=session), timeout=HANG_GUARD).success
    code, details = code_of(lambda: stub.Generate(ask(pb, session, "hi"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "paused" in details
    assert stub.Resume(pb.ResumeRequest(session_id=session), timeout=HANG_GUARD).success
    assert stub.Generate(ask(pb, session, "hi"), timeout=HANG_GUARD).message.content == "resumed"

    code, details = code_of(lambda: stub.Generate(pb.GenerateRequest(session_id=session), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "messages" in details
    code, _ = code_of(lambda: stub.Generate(ask(pb, "nope", "hi"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    stub.DestroySession(pb.DestroySessionRequest(session_id=session), timeout=HANG_GUARD)
    code, details = code_of(lambda: stub.Generate(ask(pb, session, "hi"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND and "destroyed" in details


def test_an_unreachable_model_server_is_unavailable(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    request = pb.CreateSessionRequest(
        config=pb.SessionConfig(llm=pb.LLMConfig(provider="openai", model="m", base_url="http://127.0.0.1:9"))
    )
    session = stub.CreateSession(request, timeout=HANG_GUARD).session_id
    # The client's retries with backoff come first: allow for them.
    code, _ = code_of(lambda: stub.Generate(ask(pb, session, "hi"), timeout=60))
    assert code == grpc.StatusCode.UNAVAILABLE

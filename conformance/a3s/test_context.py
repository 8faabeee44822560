"""The context window: usage, compaction, clearing."""

import grpc

from conftest import HANG_GUARD, code_of

LONG = "the quick brown fox jumps over the lazy dog " * 200


def talkative(gantry, llm):
    request = gantry.pb.CreateSessionRequest(
        config=gantry.pb.SessionConfig(llm=gantry.llm_config(llm)),
        initial_context=[gantry.pb.Message(role=r, content=LONG) for r in ("user", "assistant", "user", "assistant")],
    )
    return gantry.stub.CreateSession(request, timeout=HANG_GUARD).session_id


def test_compaction_waits_for_the_summary_and_shrinks_the_context(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([{"reply": {"text": "Summary: a fox, again and again."}}])
    session = talkative(gantry, llm)
    usage = stub.GetContextUsage(pb.GetContextUsageRequest(session_id=session), timeout=HANG_GUARD).usage
    assert usage.message_count == 4 and usage.total_tokens > 1000
    compacted = stub.CompactContext(pb.CompactContextRequest(session_id=session), timeout=HANG_GUARD)
    assert compacted.success
    assert compacted.before == usage
    assert compacted.after.total_tokens + 1000 < compacted.before.total_tokens
    assert compacted.after.prompt_tokens > 0
    assert len(llm.requests()) == 1


def test_clearing_needs_no_model_and_empties_the_context(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([])
    session = talkative(gantry, llm)
    before = stub.GetContextUsage(pb.GetContextUsageRequest(session_id=session), timeout=HANG_GUARD).usage
    assert stub.ClearContext(pb.ClearContextRequest(session_id=session), timeout=HANG_GUARD).success
    after = stub.GetContextUsage(pb.GetContextUsageRequest(session_id=session), timeout=HANG_GUARD).usage
    assert after.total_tokens + 1000 < before.total_tokens
    assert not llm.requests()


def test_context_errors(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([])
    dead = gantry.stub.CreateSession(
        pb.CreateSessionRequest(config=pb.SessionConfig(llm=gantry.llm_config(llm, base_url="http://127.0.0.1:9"))),
        timeout=HANG_GUARD,
    ).session_id
    code, _ = code_of(lambda: stub.CompactContext(pb.CompactContextRequest(session_id=dead), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.UNAVAILABLE
    stub.DestroySession(pb.DestroySessionRequest(session_id=dead), timeout=HANG_GUARD)
    code, _ = code_of(lambda: stub.ClearContext(pb.ClearContextRequest(session_id=dead), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    code, _ = code_of(lambda: stub.GetContextUsage(pb.GetContextUsageRequest(session_id="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    code, details = code_of(lambda: stub.CompactContext(pb.CompactContextRequest(), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "session_id" in details

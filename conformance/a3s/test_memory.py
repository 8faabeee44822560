"""Memory: store, retrieve, search, statistics, clearing, deleting one, summaries."""

import json

import grpc

from conftest import HANG_GUARD, code_of


def test_memories_are_stored_found_counted_and_cleared(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([]))

    def store(**memory):
        reply = stub.StoreMemory(
            pb.StoreMemoryRequest(session_id=session, memory=pb.MemoryItem(**memory)), timeout=HANG_GUARD
        )
        assert reply.success
        return reply.memory_id

    assert store(id="ship", content="deploy with ship.sh", importance=0.9, tags=["Ops"],
                 memory_type=pb.MEMORY_TYPE_PROCEDURAL, metadata={"from": "README"}) == "ship"
    store(content="the deploy failed on Monday", importance=0.4, memory_type=pb.MEMORY_TYPE_EPISODIC)
    store(content="editing main.rs", importance=0.1, memory_type=pb.MEMORY_TYPE_WORKING)

    got = stub.RetrieveMemory(pb.RetrieveMemoryRequest(session_id=session, memory_id="ship"), timeout=HANG_GUARD)
    assert got.HasField("memory")
    assert got.memory.content == "deploy with ship.sh"
    assert list(got.memory.tags) == ["ops"] and got.memory.metadata["from"] == "README"
    assert got.memory.access_count == 1 and got.memory.HasField("last_accessed")
    missing = stub.RetrieveMemory(pb.RetrieveMemoryRequest(session_id=session, memory_id="never"), timeout=HANG_GUARD)
    assert not missing.HasField("memory")

    found = stub.SearchMemories(pb.SearchMemoriesRequest(session_id=session, query="deploy"), timeout=HANG_GUARD)
    assert found.total_count == 2
    tagged = stub.SearchMemories(pb.SearchMemoriesRequest(session_id=session, tags=["ops"]), timeout=HANG_GUARD)
    assert [m.id for m in tagged.memories] == ["ship"]
    limited = stub.SearchMemories(
        pb.SearchMemoriesRequest(session_id=session, limit=1, recent_only=True, min_importance=0.3), timeout=HANG_GUARD
    )
    assert len(limited.memories) == 1 and limited.total_count == 2

    stats = stub.GetMemoryStats(pb.GetMemoryStatsRequest(session_id=session), timeout=HANG_GUARD).stats
    assert (stats.long_term_count, stats.short_term_count, stats.working_count) == (1, 1, 1)
    cleared = stub.ClearMemories(
        pb.ClearMemoriesRequest(session_id=session, clear_short_term=True, clear_working=True), timeout=HANG_GUARD
    )
    assert cleared.success and cleared.cleared_count == 2
    stats = stub.GetMemoryStats(pb.GetMemoryStatsRequest(session_id=session), timeout=HANG_GUARD).stats
    assert (stats.long_term_count, stats.short_term_count, stats.working_count) == (1, 0, 0)


def test_bad_memory_input_is_refused(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([]))
    cases = [
        (pb.StoreMemoryRequest(session_id=session), "memory"),
        (pb.StoreMemoryRequest(session_id=session, memory=pb.MemoryItem(content=" ")), "memory.content"),
        (pb.StoreMemoryRequest(session_id=session, memory=pb.MemoryItem(content="x", importance=2)), "memory.importance"),
        (pb.StoreMemoryRequest(session_id=session, memory=pb.MemoryItem(content="x", memory_type=42)), "memory.memory_type"),
    ]
    for request, field in cases:
        code, details = code_of(lambda: stub.StoreMemory(request, timeout=HANG_GUARD))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith(field + ":"), details
    code, details = code_of(
        lambda: stub.SearchMemories(pb.SearchMemoriesRequest(session_id=session, min_importance=-1), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("min_importance:")
    code, details = code_of(lambda: stub.RetrieveMemory(pb.RetrieveMemoryRequest(session_id=session), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("memory_id:")
    code, _ = code_of(lambda: stub.GetMemoryStats(pb.GetMemoryStatsRequest(session_id="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    code, details = code_of(lambda: stub.ClearMemories(pb.ClearMemoriesRequest(), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "session_id" in details


def test_one_memory_is_deleted_and_memories_are_summarized_by_the_sessions_model(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([{"reply": {"text": "Ship with ship.sh; Monday's deploy failed."}}])
    session = gantry.session(llm)
    for memory_id, content in [("ship", "deploy with ship.sh"), ("monday", "the deploy failed on Monday"),
                               ("gone", "a wrong fact")]:
        stub.StoreMemory(
            pb.StoreMemoryRequest(session_id=session, memory=pb.MemoryItem(id=memory_id, content=content, tags=["ops"])),
            timeout=HANG_GUARD,
        )
    delete = lambda memory_id: stub.DeleteMemory(  # noqa: E731
        pb.DeleteMemoryRequest(session_id=session, memory_id=memory_id), timeout=HANG_GUARD
    ).success
    assert delete("gone")
    assert not delete("gone"), "an id the session does not see is success=false, as in A3S"
    assert not stub.RetrieveMemory(
        pb.RetrieveMemoryRequest(session_id=session, memory_id="gone"), timeout=HANG_GUARD
    ).HasField("memory")

    summary = stub.SummarizeMemories(pb.SummarizeMemoriesRequest(session_id=session, tags=["ops"]), timeout=HANG_GUARD)
    assert summary.summary == "Ship with ship.sh; Monday's deploy failed."
    assert summary.memory_count == 2 and summary.stored and summary.summary_memory_id
    [request] = llm.requests()
    asked = json.dumps(request["body"])
    assert "ship.sh" in asked and "Monday" in asked and "a wrong fact" not in asked
    kept = stub.RetrieveMemory(
        pb.RetrieveMemoryRequest(session_id=session, memory_id=summary.summary_memory_id), timeout=HANG_GUARD
    ).memory
    assert kept.content == summary.summary and list(kept.tags) == ["summary"]
    assert kept.memory_type == pb.MEMORY_TYPE_SEMANTIC and kept.metadata["source_count"] == "2"
    history = stub.GetMessages(pb.GetMessagesRequest(session_id=session), timeout=HANG_GUARD)
    assert history.total_count == 0, "the summary request is not part of the conversation"

    nothing = stub.SummarizeMemories(
        pb.SummarizeMemoriesRequest(session_id=session, tags=["no-such-tag"]), timeout=HANG_GUARD
    )
    assert nothing.memory_count == 0 and not nothing.stored and nothing.summary_memory_id == ""

"""PUB topics of a running agent, their payloads and their order."""

import json

TOOL_TURN = [
    {"reply": {"text": "Let me check.", "chunk_size": 3,
               "tool_calls": [{"id": "call_one", "name": "shell", "arguments": {"command": "echo pando-one"}},
                              {"id": "call_two", "name": "shell", "arguments": {"command": "echo pando-two"}}]}},
    {"reply": {"text": "Both commands ran.", "chunk_size": 4}},
]


def test_a_turn_with_tool_calls_publishes_every_topic_in_order(pando):
    _, [inst] = pando(TOOL_TURN)
    assert inst.call("message.send", {"session_id": "work", "content": "run two"}) == {"ok": True}
    seen = inst.until("llm.end")
    topics = [t for t, _ in seen]
    for _, envelope in seen:
        if envelope["topic"] != "session.list":
            assert envelope["sessionId"] == "work", envelope

    # A new session: announced, then the list.
    assert topics.index("session.update") < topics.index("session.list") < topics.index("llm.start")
    created = dict(seen)["session.update"]["payload"]
    assert created["id"] == "work"

    turn = topics[topics.index("llm.start"):]
    assert turn[0] == "llm.start" and turn[-1] == "llm.end"
    payloads = [(t, e["payload"]) for t, e in seen[topics.index("llm.start"):]]
    assert payloads[0][1] == {"session_id": "work"}
    tokens = "".join(p["token"] for t, p in payloads if t == "llm.token")
    assert tokens == "Let me check.Both commands ran."
    assert all(p["session_id"] == "work" for _, p in payloads)

    # Each call: one start, then one end, paired by call_id.
    starts = {p["call_id"]: i for i, (t, p) in enumerate(payloads) if t == "tool.start"}
    ends = {p["call_id"]: i for i, (t, p) in enumerate(payloads) if t == "tool.end"}
    assert set(starts) == set(ends) == {"call_one", "call_two"}
    for call_id in starts:
        assert starts[call_id] < ends[call_id]
        start, end = payloads[starts[call_id]][1], payloads[ends[call_id]][1]
        assert start["tool_name"] == end["tool_name"] == "shell"
        assert isinstance(start["params"], str)
        word = "one" if call_id == "call_one" else "two"
        assert json.loads(start["params"]) == {"command": f"echo pando-{word}"}
        assert end["is_error"] is False
        assert f"pando-{word}" in end["result"]

    # Messages: the user's, the first round's (after its tools ran), the answer.
    appends = [(i, p) for i, (t, p) in enumerate(payloads) if t == "message.append"]
    assert [p["role"] for _, p in appends] == ["user", "assistant", "assistant"]
    assert appends[0][1]["content"] == "run two"
    assert appends[1][1]["content"] == "Let me check."
    assert appends[1][0] > max(ends.values())
    assert appends[2][1]["content"] == "Both commands ran."
    listed = inst.call("message.list", {"session_id": "work"})
    assert [(m["id"], m["content"]) for m in listed] == [
        (p["message_id"], p["content"]) for _, p in appends]

    end = payloads[-1][1]
    assert end["tokens_in"] > 0 and end["tokens_out"] > 0

    # After the turn: the session's new state, then the list.
    after = inst.until("session.list")
    update = [e["payload"] for t, e in after if t == "session.update"][-1]
    assert update["message_count"] == 3
    assert after[-1][1]["payload"]["sessions"][0]["message_count"] == 3


def test_a_failing_tool_ends_with_is_error_and_a_clipped_result(pando):
    long_output = "python3 -c \"print('x' * 2000); raise SystemExit(3)\""
    steps = [
        {"reply": {"tool_calls": [{"id": "call_bad", "name": "shell", "arguments": {"command": long_output}}]}},
        {"reply": {"text": "It failed."}},
    ]
    _, [inst] = pando(steps)
    inst.call("message.send", {"session_id": "bad", "content": "fail"})
    end = inst.topic("tool.end")
    assert end["call_id"] == "call_bad" and end["is_error"] is True
    assert end["result"].endswith("...") and len(end["result"].encode()) <= 512 + 3
    inst.topic("llm.end")


def test_heartbeats_carry_the_instance_and_its_sessions(pando):
    _, [inst] = pando([{"reply": {"text": "ok"}}])
    beat = inst.topic("instance.heartbeat")
    assert beat["instance_id"] == inst.id
    assert beat["started_at"] == inst.lock["started_at"]
    assert beat["session_count"] == 0 and "active_session_id" not in beat
    inst.call("message.send", {"session_id": "hb", "content": "hello"})
    inst.topic("llm.end")
    inst.call("session.activate", {"session_id": "hb"})
    beat = inst.topic("instance.heartbeat")
    assert beat["session_count"] == 1 and beat["active_session_id"] == "hb"


def test_interrupting_a_running_turn_ends_it(pando):
    slow = [{"reply": {"text": "a slow answer " * 40, "chunk_size": 2, "delay_ms": 50}}]
    _, [inst] = pando(slow)
    inst.call("message.send", {"session_id": "slow", "content": "take your time"})
    inst.topic("llm.token")
    assert inst.call("session.interrupt", {"session_id": "slow"}) == {"ok": True}
    seen = inst.until("llm.end")
    tokens = "".join(e["payload"]["token"] for t, e in seen if t == "llm.token")
    assert len(tokens) < len("a slow answer " * 40)
    # Queued behind nothing now: the next message starts a turn at once.
    [session] = inst.call("session.list")
    assert session["id"] == "slow"

"""CodeWhale over HTTP with curl: a whole session (a turn with tool rounds,
an approval asked and answered, the SSE stream resumed mid-turn, fork,
archive), goals, app requests, a one-shot prompt, and every error case."""

import json

from conftest import TOKEN

# Round 1 runs a command `unless_trusted` asks about; round 2 one it lets
# through (read-only); round 3 answers.
SESSION = [
    {"reply": {"tool_calls": [{"id": "call_touch", "name": "shell",
                               "arguments": {"command": "touch made-by-agent.txt"}}]}},
    {"reply": {"tool_calls": [{"id": "call_ls", "name": "shell",
                               "arguments": {"command": "ls"}}]}},
    {"reply": {"text": "Created made-by-agent.txt for you.", "chunk_size": 4}},
]


def texts(frames):
    """Each response's text, its deltas joined."""
    out = {}
    for f in frames:
        if f["event"] == "response_delta" and f.get("channel", "text") == "text":
            out[f["response_id"]] = out.get(f["response_id"], "") + f["delta"]
    return out


def shape(frames):
    """The frames but deltas (whose chunking a replay folds)."""
    return [f for f in frames if f["event"] not in ("response_delta", "exec_command_output_delta")]


def test_a_whole_session_with_tools_an_approval_and_a_resumed_stream(server):
    s = server(SESSION)
    started = s.curl.thread(kind="start", approval_policy="unless_trusted")
    assert started["status"] == "started"
    thread_id = started["thread_id"]
    assert started["thread"]["id"] == thread_id
    assert started["thread"]["status"] == "idle"
    assert started["approval_policy"] == "unless_trusted"
    assert started["model"] == "mock/gpt-4.1-mini"
    assert started["model_provider"] == "mock"
    assert started["cwd"] == str(s.workspace)
    assert started["threads"] == [] and started["events"] == []

    live = s.sse(thread_id)
    accepted = s.curl.thread(kind="message", thread_id=thread_id, input="make a file")
    assert accepted["status"] == "accepted"
    turn_id = accepted["data"]["turn_id"]

    # The first connection reads up to the approval, then drops.
    first = live.until("exec_approval_request")
    live.close()
    ask = first[-1]["request"]
    assert ask["command"] == "touch made-by-agent.txt"
    assert ask["call_id"] == "call_touch"
    assert ask["turn_id"] == turn_id
    assert {"type": "approved"} in ask["available_decisions"]
    assert not (s.workspace / "made-by-agent.txt").exists(), "ran before it was approved"
    assert [f["event"] for f in first[:2]] == ["turn_started", "response_start"]

    answer = s.curl.json(f"/thread/{thread_id}/approvals/{ask['approval_id']}",
                         {"decision": "approved"})
    assert answer["status"] == "ok"
    # Answered once: a second answer is refused, not applied twice.
    again = s.curl.json(f"/thread/{thread_id}/approvals/{ask['approval_id']}",
                        {"decision": "denied"})
    assert again["status"] == "error"

    # Resumed from the last id the first connection saw: the rest, once.
    resumed = s.sse(thread_id, last_event_id=live.last_id)
    second = resumed.until("turn_complete")
    resumed.close()
    assert (s.workspace / "made-by-agent.txt").exists()

    # The same frames as one uninterrupted stream from the start.
    whole_stream = s.sse(thread_id)
    whole = whole_stream.until("turn_complete")
    whole_stream.close()
    assert shape(first + second) == shape(whole)
    assert texts(first + second) == texts(whole)
    assert list(texts(whole).values()) == ["Created made-by-agent.txt for you."]

    events = [f["event"] for f in whole]
    # Two tool rounds, each a response with its call inside, then the answer.
    assert events.count("response_start") == 3
    assert events.count("tool_call_start") == 2
    assert events.count("exec_command_end") == 2
    results = [f for f in whole if f["event"] == "tool_call_result"]
    assert [r["tool_name"] for r in results] == ["shell", "shell"]
    assert all(r["output"]["type"] == "function" and r["output"]["success"] for r in results)
    assert "made-by-agent.txt" in [
        f for f in whole if f["event"] == "exec_command_output_delta"][-1]["delta"]
    assert events[-2:] == ["response_end", "turn_complete"]

    read = s.curl.thread(kind="read", thread_id=thread_id)
    assert read["status"] == "ok"
    roles = [m["role"] for m in read["data"]["history"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert read["data"]["history"][-1]["content"] == "Created made-by-agent.txt for you."

    forked = s.curl.thread(kind="fork", thread_id=thread_id)
    assert forked["status"] == "forked"
    assert forked["thread_id"] != thread_id
    assert forked["thread"]["source"] == "fork"
    # CodeWhale's fork history opens with where it came from; then the
    # conversation it copied.
    fork_entry, *copied = forked["data"]["history"]
    assert fork_entry["role"] == "history"
    assert fork_entry["item"] == {"from_thread_id": thread_id, "type": "fork"}
    assert [m["content"] for m in copied] == [m["content"] for m in read["data"]["history"]]

    archived = s.curl.thread(kind="archive", thread_id=thread_id)
    assert archived["status"] == "archived"
    listed = s.curl.thread(kind="list")
    assert listed["thread_id"] == "list"
    assert [t["id"] for t in listed["threads"]] == [forked["thread_id"]]
    everything = s.curl.thread(kind="list", include_archived=True)
    statuses = {t["id"]: t["status"] for t in everything["threads"]}
    assert statuses[thread_id] == "archived"
    assert s.curl.thread(kind="unarchive", thread_id=thread_id)["status"] == "unarchived"

    named = s.curl.thread(kind="set_name", thread_id=thread_id, name="file maker")
    assert named["thread"]["name"] == "file maker"


def test_a_denied_approval_is_not_run_and_the_model_is_told(server):
    s = server([
        {"reply": {"tool_calls": [{"name": "shell",
                                   "arguments": {"command": "touch denied.txt"}}]}},
        {"reply": {"text": "Understood, I did not create it."}},
    ])
    thread_id = s.curl.thread(kind="start", approval_policy="unless_trusted")["thread_id"]
    live = s.sse(thread_id)
    s.curl.thread(kind="message", thread_id=thread_id, input="make a file")
    ask = live.until("exec_approval_request")[-1]["request"]
    assert s.curl.json(f"/thread/{thread_id}/approvals/{ask['approval_id']}",
                       {"decision": "denied"})["status"] == "ok"
    rest = live.until("turn_complete")
    live.close()
    result = [f for f in rest if f["event"] == "tool_call_result"][0]
    assert result["output"]["success"] is False
    assert not (s.workspace / "denied.txt").exists()


def test_goals(server):
    s = server([])
    thread_id = s.curl.thread(kind="create")["thread_id"]
    set_ = s.curl.thread(kind="goal_set", thread_id=thread_id, objective="Ship it",
                         token_budget=59000)
    assert set_["status"] == "ok"
    assert set_["goal"]["objective"] == "Ship it"
    assert set_["goal"]["status"] == "active"
    assert set_["goal"]["token_budget"] == 59000
    assert set_["events"] == [{"event": "thread_goal_updated", "goal": set_["goal"]}]
    got = s.curl.thread(kind="goal_get", thread_id=thread_id)
    assert got["goal"] == set_["goal"] and got["data"]["goal"] == set_["goal"]
    cleared = s.curl.thread(kind="goal_clear", thread_id=thread_id)
    assert cleared["status"] == "cleared"
    assert cleared["events"] == [{"event": "thread_goal_cleared", "thread_id": thread_id}]
    assert cleared["data"] == {"cleared": True}
    empty = s.curl.thread(kind="goal_clear", thread_id=thread_id)
    assert empty["status"] == "empty" and empty["events"] == []


def test_app_requests(server):
    s = server([])
    caps = s.curl.app(kind="capabilities")
    assert caps["ok"] and "/thread" in caps["data"]["routes"]
    models = s.curl.app(kind="models")
    assert "mock/gpt-4.1-mini" in [m["id"] for m in models["data"]["models"]]
    # Secrets never come back over HTTP.
    key = s.curl.app(kind="config_get", key="providers.mock.api_key")
    assert key["ok"] and "secret" not in key["data"]["value"]
    listed = s.curl.app(kind="config_list")["data"]["values"]
    assert listed["model"] == "mock/gpt-4.1-mini"
    assert "secret" not in json.dumps(listed)
    set_ = s.curl.app(kind="config_set", key="approval_policy", value="on-request")
    # Handed back as it was given, as the reference does.
    assert set_["ok"] and set_["data"]["value"] == "on-request"
    assert s.curl.app(kind="config_get", key="approval_policy")["data"]["value"] == "on-request"
    assert s.curl.app(kind="config_unset", key="approval_policy")["ok"]
    assert s.curl.app(kind="config_get", key="approval_policy")["data"]["value"] is None
    bad = s.curl.app(kind="config_set", key="no_such_key", value="1")
    assert bad["ok"] is False and "no_such_key" in bad["data"]["error"]
    assert s.curl.thread(kind="create")["status"] == "created"
    loaded = s.curl.app(kind="thread_loaded_list")
    assert loaded["ok"] and len(loaded["data"]["threads"]) == 1


def test_a_prompt_runs_a_real_turn(server):
    s = server([{"reply": {"text": "Forty-two.", "reasoning": "Thinking hard."}}])
    answer = s.curl.json("/prompt", {"prompt": "What is the answer?"})
    assert answer["output"] == "Forty-two."
    assert answer["model"] == "mock/gpt-4.1-mini"
    events = [f["event"] for f in answer["events"]]
    assert events[0] == "turn_started" and events[-1] == "turn_complete"
    channels = {f.get("channel", "text") for f in answer["events"]
                if f["event"] == "response_delta"}
    assert channels == {"text", "reasoning"}
    assert "What is the answer?" in json.dumps(s.llm.requests()[0]["body"])


def test_a_thread_made_over_http_is_a_gantry_thread(server):
    """Threads are the engine's: the same id reads back from any request."""
    s = server([])
    made = s.curl.thread(kind="create", metadata={"origin": "curl"})
    assert made["status"] == "created"
    read = s.curl.thread(kind="read", thread_id=made["thread_id"])
    assert read["thread"] == made["thread"]


def test_every_error_case(server):
    s = server([])
    curl = s.curl
    # Health needs no token; everything else does, exactly as `Bearer <token>`.
    status, _, body = curl.call("GET", "/healthz", token=None)
    assert status == 200 and json.loads(body)["status"] == "ok"
    for token in (None, "wrong"):
        status, head, body = curl.call("POST", "/thread", {"kind": "list"}, token=token)
        assert status == 401
        assert json.loads(body) == {"error": {"message": json.loads(body)["error"]["message"],
                                              "status": 401}}
    status, _, _ = curl.call("POST", "/thread", {"kind": "list"}, token=None,
                             headers=["Content-Type: application/json",
                                      f"Authorization: bearer {TOKEN}"])
    assert status == 401
    # Auth comes before the body is read.
    status, _, _ = curl.call("POST", "/thread", raw="{not json", token=None)
    assert status == 401

    def body_error(raw=None, body=None, headers=None):
        status, head, text = curl.call("POST", "/thread", body, raw=raw, headers=headers)
        assert "content-type: text/plain" in head, head
        return status

    assert body_error(raw="{not json") == 400
    assert body_error(body={"kind": "nope"}) == 422
    assert body_error(body={"thread_id": "x"}) == 422
    assert body_error(body={"kind": "resume"}) == 422
    assert body_error(body={"kind": "list"}, headers=[]) == 415
    status, _, text = curl.call("GET", "/no/such/route")
    assert (status, text) == (404, "")
    status, _, text = curl.call("GET", "/thread")
    assert (status, text) == (405, "")

    # Domain errors are answers with a status.
    for kind in ("resume", "fork"):
        missing = curl.thread(kind=kind, thread_id="no-such-thread")
        assert missing["status"] == "missing"
        assert missing["data"]["error"] == "thread not found"
    missing = curl.thread(kind="goal_set", thread_id="no-such-thread", objective="x")
    assert (missing["status"], missing["data"]["error"]) == ("missing", "thread not found")
    for body in ({"kind": "read", "thread_id": "no-such-thread"},
                 {"kind": "set_name", "thread_id": "no-such-thread", "name": "x"},
                 {"kind": "goal_get", "thread_id": "no-such-thread"}):
        answer = curl.json("/thread", body)
        assert answer["status"] == "ok" and "thread" not in answer
        assert "threads" in answer and "events" in answer and "data" in answer
    status, _, _ = curl.call("GET", "/thread/no-such-thread/events")
    assert status == 404


def test_an_interrupt_stops_a_running_turn(server):
    s = server([{"reply": {"text": "a long answer " * 50, "chunk_size": 4, "delay_ms": 50}}])
    thread_id = s.curl.thread(kind="start")["thread_id"]
    live = s.sse(thread_id)
    accepted = s.curl.thread(kind="message", thread_id=thread_id, input="talk")
    assert accepted["status"] == "accepted"
    # Streaming: its text has started.
    live.until("response_delta")
    stopped = s.curl.json(f"/thread/{thread_id}/interrupt", {})
    assert stopped["status"] != "error", stopped
    end = live.until("turn_aborted")[-1]
    live.close()
    assert end == {"event": "turn_aborted", "turn_id": accepted["data"]["turn_id"],
                   "reason": "interrupted"}
    assert s.curl.thread(kind="read", thread_id=thread_id)["thread"]["status"] == "idle"

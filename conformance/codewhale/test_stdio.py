"""CodeWhale over stdio with Python's own json: JSON-RPC 2.0 lines in and
out, a turn with a tool round and an approval whose frames arrive as
notifications, a one-shot prompt, the aliases, and every error code."""

import json

# Round 1 runs a command `unless_trusted` asks about, round 2 answers.
TURN = [
    {"reply": {"tool_calls": [{"id": "call_1", "name": "shell",
                               "arguments": {"command": "touch from-stdio.txt"}}]}},
    {"reply": {"text": "Done over stdio."}},
    {"reply": {"text": "A one-shot answer."}},
]


def test_a_session_over_stdio(stdio):
    s = stdio(TURN)
    started = s.call("thread/start", {"approval_policy": "unless_trusted"})
    assert started["status"] == "started"
    thread_id = started["thread_id"]

    accepted = s.call("thread/message", {"thread_id": thread_id, "input": "make a file"})
    assert accepted["status"] == "accepted"
    assert s.event("turn_started")["params"]["thread_id"] == thread_id
    ask = s.event("exec_approval_request")["params"]["frame"]["request"]
    assert ask["command"] == "touch from-stdio.txt"
    assert not (s.workspace / "from-stdio.txt").exists()
    answer = s.call("thread/approval", {"thread_id": thread_id,
                                        "approval_id": ask["approval_id"],
                                        "decision": "approved"})
    assert answer["status"] == "ok"
    assert s.event("exec_command_end")["params"]["frame"]["exit_code"] == 0
    assert s.event("response_delta")["params"]["frame"]["delta"]
    done = s.event("turn_complete")
    assert done["params"]["frame"]["turn_id"] == accepted["data"]["turn_id"]
    assert (s.workspace / "from-stdio.txt").exists()

    read = s.call("thread/read", {"thread_id": thread_id})
    assert read["data"]["history"][-1]["content"] == "Done over stdio."

    prompt = s.call("prompt/run", {"prompt": "one shot"})
    assert prompt["output"] == "A one-shot answer."
    assert prompt["events"][-1]["event"] == "turn_complete"

    # The aliases CodeWhale accepts.
    named = s.call("thread/set-name", {"thread_id": thread_id, "name": "stdio"})
    assert named["thread"]["name"] == "stdio"
    goal = s.call("thread/goal-set", {"thread_id": thread_id, "objective": "o"})
    assert goal["goal"]["objective"] == "o"
    assert s.call("thread/goal_get", {"thread_id": thread_id})["goal"]["objective"] == "o"
    assert s.call("thread/goal/clear", {"thread_id": thread_id})["status"] == "cleared"
    whole = s.call("thread/request", {"kind": "list", "include_archived": True})
    assert thread_id in [t["id"] for t in whole["threads"]]
    assert s.call("app/capabilities")["ok"]
    assert "mock/gpt-4.1-mini" in [m["id"] for m in s.call("app/models")["data"]["models"]]
    assert s.call("app/config/get", {"key": "model"})["data"]["value"] == "mock/gpt-4.1-mini"
    assert s.call("app/request", {"kind": "config_list"})["ok"]
    assert s.call("app/thread_loaded_list")["ok"]

    stopped = s.call("shutdown")
    assert stopped == {"ok": True, "status": "stopped"}
    assert s.proc.wait(timeout=30) == 0
    # stdout held protocol lines only.
    rest = s.buffer + s.proc.stdout.read()
    for line in s.lines + rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_every_error_code(stdio):
    s = stdio([])

    def error_of(answer):
        assert "result" not in answer
        assert answer["error"]["data"] is None
        return answer["error"]["code"]

    s.send_line("{not json")
    answer = s.read()
    assert answer["id"] is None and error_of(answer) == -32700

    s.send_line(json.dumps({"jsonrpc": "1.0", "id": 7, "method": "thread/list"}))
    answer = s.read()
    assert answer["id"] == 7 and error_of(answer) == -32600

    assert error_of(s.request("thread/nope")) == -32601
    assert error_of(s.request("thread/read", {})) == -32602
    assert error_of(s.request("thread/message", {"thread_id": 5})) == -32602

    # A request without an id is still answered, with id null.
    s.send_line(json.dumps({"jsonrpc": "2.0", "method": "thread/list"}))
    answer = s.read()
    assert answer["id"] is None and answer["result"]["thread_id"] == "list"

    # Domain errors are answers.
    missing = s.call("thread/resume", {"thread_id": "no-such-thread"})
    assert (missing["status"], missing["data"]["error"]) == ("missing", "thread not found")
    read = s.call("thread/read", {"thread_id": "no-such-thread"})
    assert read["status"] == "ok" and "thread" not in read

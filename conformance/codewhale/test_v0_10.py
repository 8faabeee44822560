"""CodeWhale 0.10 driven as a 0.10 client drives it (curl over HTTP,
Python's json over stdio), with real turns against the scripted model:
a tool-free turn, an interactive one (a question answered with
`submit_user_input`, an approval, the SSE stream resumed mid-turn), a
question nobody answers in time, an interrupt, and a creation retried
with its `operation_key` after a restart. Its byte-for-byte answers are
judged by test_diff.py; here, what the turns do."""

import json
import threading
import time

from conftest import HANG_GUARD

VERSION = "0.10.2"

QUESTION = {
    "questions": [{
        "id": "color", "header": "Color", "question": "Which color should the file say?",
        "options": [{"label": "Red", "description": "warm"},
                    {"label": "Blue", "description": "cool"}],
    }],
}


def ask(call_id="call_ask"):
    return {"reply": {"tool_calls": [{"id": call_id, "name": "request_user_input",
                                      "arguments": QUESTION}]}}


def in_background(call):
    """Runs `call()` on a thread; `.get()` waits for its answer."""
    box = {}

    def run():
        try:
            box["value"] = call()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e
    worker = threading.Thread(target=run, daemon=True)
    worker.start()

    class Pending:
        @staticmethod
        def get():
            worker.join(HANG_GUARD)
            assert not worker.is_alive(), "no answer came"
            if "error" in box:
                raise box["error"]
            return box["value"]
    return Pending


def tool_results(llm):
    """The tool messages the model was sent, in order."""
    out = []
    for request in llm.requests():
        for message in request["body"].get("messages", []):
            if message.get("role") == "tool":
                out.append(message["content"])
    return out


def test_a_tool_free_turn_offers_no_tools_and_answers_when_it_ends(server):
    s = server([{"reply": {"text": "Hello from the model.", "chunk_size": 5}}], VERSION)
    started = s.curl.thread(kind="start", operation_key="op-tool-free")
    answer = s.curl.thread(kind="message", thread_id=started["thread_id"], input="hi",
                           allowed_tools=[])
    assert answer["status"] == "completed"
    frames = answer["events"]
    assert [f["event"] for f in frames][0] == "response_start"
    assert [f["event"] for f in frames][-1] == "response_end"
    assert "".join(f["delta"] for f in frames if f["event"] == "response_delta") \
        == "Hello from the model."
    assert {f["response_id"] for f in frames} == {f"{started['thread_id']}:{answer['data']['turn_id']}"}
    body = s.llm.requests()[0]["body"]
    assert not body.get("tools"), "a tool-free turn offers the model no tool"


def test_an_interactive_turn_asks_the_user_asks_for_approval_and_resumes_its_stream(server):
    s = server([
        ask(),
        {"reply": {"tool_calls": [{"id": "call_touch", "name": "shell",
                                   "arguments": {"command": "touch blue.txt"}}]}},
        {"reply": {"text": "Wrote blue.txt."}},
    ], VERSION)
    # Someone attends: the agent may ask, and commands are approved.
    assert s.curl.app(kind="config_set", key="approval_policy", value="unless_trusted")["ok"]
    thread_id = s.curl.thread(kind="start", operation_key="op-interactive")["thread_id"]
    live = s.sse(thread_id)
    message = in_background(lambda: s.curl.thread(kind="message", thread_id=thread_id,
                                                  input="make the file"))

    asked = live.until("user_input_request")[-1]["request"]
    assert asked["call_id"] == "call_ask"
    assert asked["questions"][0]["id"] == "color"
    assert [o["label"] for o in asked["questions"][0]["options"]] == ["Red", "Blue"]
    answered = s.curl.app(kind="submit_user_input", request_id=asked["request_id"],
                          answers=[{"id": "color", "label": "Blue", "value": "Blue"}])
    assert answered["ok"] and answered["data"]["resolved"], answered
    # Answered once: a second answer finds nobody waiting.
    status, _, again = s.curl.call("POST", "/app", {"kind": "submit_user_input",
                                                    "request_id": asked["request_id"],
                                                    "answers": []})
    assert status == 409, again

    # The stream drops at the approval and resumes after it.
    approval = live.until("exec_approval_request")[-1]["request"]
    live.close()
    assert approval["command"] == "touch blue.txt"
    assert not (s.workspace / "blue.txt").exists(), "ran before it was approved"
    assert s.curl.json(f"/thread/{thread_id}/approvals/{approval['approval_id']}",
                       {"decision": "approved"})["status"] == "ok"
    resumed = s.sse(thread_id, last_event_id=live.last_id)
    rest = resumed.until("turn_complete")
    resumed.close()
    assert "exec_approval_request" not in [f["event"] for f in rest], "nothing twice"
    assert "exec_command_end" in [f["event"] for f in rest]

    answer = message.get()
    assert answer["status"] == "completed", answer
    names = [f["event"] for f in answer["events"]]
    assert names[0] == "response_start" and names[-1] == "response_end"
    assert "user_input_request" in names and "exec_approval_request" in names
    assert (s.workspace / "blue.txt").exists()
    heard = json.loads(tool_results(s.llm)[0])
    assert heard["status"] == "answered"
    assert heard["answers"][0]["selected"] == ["Blue"]


def test_a_question_nobody_answers_times_out_and_the_turn_goes_on(stdio):
    s = stdio([ask(), {"reply": {"text": "I assumed red."}}], VERSION)
    assert s.call("app/config/set", {"key": "approval_policy", "value": "unless_trusted"})["ok"]
    assert s.call("app/config/set", {"key": "tools.user_input_timeout_seconds",
                                     "value": "1"})["ok"]
    thread_id = s.call("thread/start", {"operation_key": "op-timeout"})["thread_id"]
    s.next_id += 1
    s.send_line(json.dumps({"jsonrpc": "2.0", "id": s.next_id, "method": "thread/message",
                            "params": {"thread_id": thread_id, "input": "which color?"}}))
    lines = []
    while True:
        line = s.read()
        if line.get("id") == s.next_id:
            answer = line
            break
        lines.append(line)
    assert "error" not in answer, answer
    assert answer["result"]["status"] == "accepted"
    kinds = [line["type"] for line in lines]
    assert kinds[0] == "response_start" and kinds[-1] == "response_end", kinds
    assert "user_input_request" in kinds
    assert json.loads(tool_results(s.llm)[0])["status"] == "timed_out"


def test_an_interrupt_ends_the_turn_and_the_message_says_so(stdio):
    s = stdio([{"reply": {"text": "a long answer " * 50, "chunk_size": 4, "delay_ms": 50}}],
              VERSION)
    thread_id = s.call("thread/start", {"operation_key": "op-interrupt"})["thread_id"]
    message_id = s.next_id = s.next_id + 1
    s.send_line(json.dumps({"jsonrpc": "2.0", "id": message_id, "method": "thread/message",
                            "params": {"thread_id": thread_id, "input": "talk",
                                       "allowed_tools": []}}))
    # The turn is streaming once its text comes.
    while s.read().get("type") != "response_delta":
        pass
    s.next_id += 1
    s.send_line(json.dumps({"jsonrpc": "2.0", "id": s.next_id, "method": "thread/interrupt",
                            "params": {"thread_id": thread_id}}))
    interrupt_id, answers, kinds = s.next_id, {}, []
    deadline = time.monotonic() + HANG_GUARD
    while len(answers) < 2:
        assert time.monotonic() < deadline
        line = s.read()
        if "jsonrpc" in line:
            answers[line["id"]] = line
        else:
            kinds.append(line["type"])
    assert answers[interrupt_id]["result"] == {"thread_id": thread_id, "interrupted": True}
    assert answers[message_id]["error"]["code"] == -32603
    assert answers[message_id]["error"]["message"] == "turn interrupted"
    assert kinds[-1] == "response_end", "the response ends before the error"


def test_a_creation_retried_with_its_key_gets_the_same_thread_after_a_restart(server, tmp_path):
    data = tmp_path / "data"
    first = server([], VERSION, data_dir=data)
    made = first.curl.thread(kind="start", operation_key="op-retry")
    forked = first.curl.thread(kind="fork", thread_id=made["thread_id"], operation_key="op-fork")
    first.stop()
    again = server([], VERSION, data_dir=data)
    retried = again.curl.thread(kind="start", operation_key="op-retry")
    assert retried["thread_id"] == made["thread_id"]
    assert retried["data"]["receipt"]["operation_key"] == "op-retry"
    refork = again.curl.thread(kind="fork", thread_id=made["thread_id"], operation_key="op-fork")
    assert refork["thread_id"] == forked["thread_id"]
    listed = again.curl.thread(kind="list")
    assert sorted(t["id"] for t in listed["threads"]) \
        == sorted([made["thread_id"], forked["thread_id"]]), "nothing made twice"
    other = again.curl.thread(kind="start", operation_key="op-other")
    assert other["thread_id"] not in (made["thread_id"], forked["thread_id"]), "another key"

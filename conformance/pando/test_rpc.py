"""The nine methods and every error case, over a DEALER."""

import json
import re

import zmq

TURN = [{"reply": {"text": "Hello from the agent."}}]


def test_every_method_answers_with_the_seeds_shapes(pando):
    _, [inst] = pando(TURN)
    ping = inst.call("instance.ping")
    assert ping["status"] == "ok" and ping["instance_id"] == inst.id
    assert re.fullmatch(r"(\d+h)?(\d+m)?\d+(\.\d+)?s", ping["uptime"])
    assert inst.call("session.list") == []

    assert inst.call("message.send", {"session_id": "sess-1", "content": "hi there"}) == {"ok": True}
    inst.topic("llm.end")
    [session] = inst.call("session.list")
    assert session["id"] == "sess-1"
    assert session["title"] == "hi there"
    assert session["message_count"] == 2
    assert session["updated_at"].endswith("Z")
    assert inst.call("session.get", {"session_id": "sess-1"}) == session

    messages = inst.call("message.list", {"session_id": "sess-1"})
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "hi there"), ("assistant", "Hello from the agent.")]
    assert all(m["id"] and m["created_at"].endswith("Z") for m in messages)

    assert inst.call("session.activate", {"session_id": "sess-1"}) == {"ok": True}
    activated = inst.until("session.activated")[-1][1]
    assert activated["sessionId"] == "sess-1" and activated["payload"]["id"] == "sess-1"

    sync = inst.call("state.sync", {"project_id": ""})
    assert sync == {"sessions": inst.call("session.list"), "active_session_id": "sess-1",
                    "instance_id": inst.id}
    assert inst.call("state.sync")["instance_id"] == inst.id

    info = inst.call("instance.info")
    for key in ("instance_id", "pid", "pub_port", "rpc_port", "started_at", "path", "mode", "is_primary"):
        assert info[key] == inst.entry[key], key
    assert info["version"] and info["model"] == "mock/gpt-4.1-mini"
    assert info["session_count"] == 1

    # Nothing runs: an interrupt is still fine.
    assert inst.call("session.interrupt", {"session_id": "sess-1"}) == {"ok": True}


def test_errors_carry_pandos_codes_and_messages(pando):
    _, [inst] = pando([])
    numeric = json.loads(inst.raw(b"", b'{"jsonrpc":"2.0","id":1,"method":"instance.ping"}')[1])
    assert numeric == {"jsonrpc": "2.0", "id": "", "error": {"code": -32700, "message": "parse error"}}
    garbage = json.loads(inst.raw(b"", b"{not json")[1])
    assert garbage["error"] == {"code": -32700, "message": "parse error"}
    assert inst.error("no.such.method") == (-32601, "ipc: method not found")
    assert inst.error("message.send", {}) == (-32000, "message.send: session_id is required")
    assert inst.error("message.send", {"session_id": "s"}) == (-32000, "message.send: content is required")
    code, message = inst.error("message.send")
    assert code == -32000 and message.startswith("message.send: invalid params: ")
    code, message = inst.error("session.get", {"session_id": 5})
    assert code == -32000 and message.startswith("session.get: invalid params: ")
    assert inst.error("session.get", {"session_id": "ghost"}) == (-32000, "session.get: session not found: ghost")
    assert inst.error("session.get", {}) == (-32000, "session.get: session_id is required")
    assert inst.error("session.activate", {"session_id": "ghost"}) == (
        -32000, "session.activate: session not found: ghost")
    assert inst.error("session.interrupt", {"session_id": "ghost"}) == (
        -32000, "session.interrupt: session not found: ghost")
    assert inst.call("message.list", {"session_id": "ghost"}) == []


def test_requests_without_the_empty_frame_and_out_of_order_replies(pando):
    _, [inst] = pando([])
    # No delimiter frame: the reply still comes as [empty, json].
    frames = inst.raw(b'{"jsonrpc":"2.0","id":"bare","method":"instance.ping"}')
    assert frames[0] == b"" and json.loads(frames[1])["id"] == "bare"
    # Many in flight at once: every one answered, matched by id.
    ids = [f"c{i}" for i in range(20)]
    for rid in ids:
        method = "session.list" if int(rid[1:]) % 2 else "instance.ping"
        inst.dealer.send_multipart([b"", json.dumps({"jsonrpc": "2.0", "id": rid, "method": method}).encode()])
    got = set()
    for _ in ids:
        assert inst.dealer.poll(30000)
        reply = json.loads(inst.dealer.recv_multipart()[1])
        assert "result" in reply
        got.add(reply["id"])
    assert got == set(ids)


def test_a_second_dealer_gets_its_own_replies(pando):
    _, [inst] = pando([])
    other = pando.ctx.socket(zmq.DEALER)
    other.setsockopt(zmq.LINGER, 0)
    other.connect(f"tcp://127.0.0.1:{inst.lock['rpc_port']}")
    other.send_multipart([b"", b'{"jsonrpc":"2.0","id":"o1","method":"instance.ping"}'])
    assert inst.call("instance.ping")["instance_id"] == inst.id
    assert other.poll(30000)
    assert json.loads(other.recv_multipart()[1])["id"] == "o1"
    other.close()

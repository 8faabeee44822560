"""Discovery files, several instances in one serve, refusal of a second
serve on the same dir, and instance.shutdown on SIGTERM."""

import json
import os
import stat
import subprocess

from conftest import REGISTRY, Instance, Serve, derived_ports


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_lock_file_and_registry_entry_describe_the_instance(pando):
    serve, [inst] = pando([])
    assert inst.lock_text.endswith("}\n") and "\n  \"" in inst.lock_text
    assert set(inst.lock) == {"instance_id", "pid", "pub_port", "rpc_port", "started_at"}
    assert inst.lock["pid"] == serve.proc.pid
    assert mode(inst.lock_path) == 0o600 and mode(inst.lock_path.parent) == 0o700
    assert mode(inst.entry_path) == 0o644
    assert inst.entry == inst.lock | {"path": str(inst.workdir), "mode": "noninteractive", "is_primary": True}
    pub_port, rpc_port = derived_ports(str(inst.workdir))
    if (inst.lock["pub_port"], inst.lock["rpc_port"]) != (pub_port, rpc_port):
        # Taken on this machine: said, and the lock file has the real ones.
        assert "is taken" in serve.stderr.text


def test_sigterm_publishes_shutdown_and_removes_the_files(pando):
    serve, [inst] = pando([])
    assert serve.stop() == 0
    payload = inst.topic("instance.shutdown")
    assert payload["instance_id"] == inst.id
    assert not inst.lock_path.exists()
    assert not inst.entry_path.exists()


def test_two_dirs_in_one_serve_are_two_instances(pando):
    serve, [a, b] = pando([{"reply": {"text": "for a"}}], n=2)
    assert a.id != b.id
    assert {a.lock["rpc_port"], a.lock["pub_port"]}.isdisjoint({b.lock["rpc_port"], b.lock["pub_port"]})
    assert a.lock["pid"] == b.lock["pid"] == serve.proc.pid
    a.call("message.send", {"session_id": "only-a", "content": "hello a"})
    a.topic("llm.end")
    assert [s["id"] for s in a.call("session.list")] == ["only-a"]
    assert b.call("session.list") == []
    assert b.call("message.list", {"session_id": "only-a"}) == []
    assert b.error("session.get", {"session_id": "only-a"})[0] == -32000
    assert b.call("instance.info")["session_count"] == 0
    serve.stop()
    for inst in (a, b):
        assert inst.topic("instance.shutdown")["instance_id"] == inst.id
        assert not inst.lock_path.exists() and not inst.entry_path.exists()


def test_a_second_serve_on_the_same_dir_refuses(pando):
    first, [inst] = pando([])
    second = Serve(pando.tmp_path, [], [inst.workdir], llm=first.llm)
    assert second.proc.wait(timeout=30) != 0
    said = second.stderr.rest()
    assert "already served by a Pando instance" in said and inst.id in said, said
    # The first instance is untouched.
    assert json.loads(inst.lock_path.read_text()) == inst.lock
    assert (REGISTRY / f"{inst.id}.json").exists()
    assert inst.call("instance.ping")["instance_id"] == inst.id

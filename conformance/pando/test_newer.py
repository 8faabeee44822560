"""The methods Pando's newer sources add (internal/ipc/protocol/rpc.go,
delegation protocol 2 and the primary's maintenance RPCs), over a DEALER:
delegation.run / .status / .cancel, instance.ping's delegation fields,
cronjob.reload (read back through Gantry's HTTP API and session.list),
db.compact on a SQLite store and in memory, kb.relink refused."""

import json
import time

import zmq

from harness import HANG_GUARD

ANSWER = "Delegated answer."


def shell(command):
    return {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}}


def test_ping_advertises_delegation_protocol_2(pando):
    _, [inst] = pando([])
    ping = inst.call("instance.ping")
    assert ping["accepts_delegations"] is True and ping["delegation_protocol"] == 2
    assert set(ping) == {"status", "instance_id", "uptime", "accepts_delegations", "delegation_protocol"}


def test_a_delegation_runs_to_completion_and_its_result_is_kept(pando):
    serve, [inst] = pando([{"reply": {"text": ANSWER}}])
    result = inst.call("delegation.run", {"prompt": "Summarize the repo.", "correlation_id": "corr-done"})
    assert set(result) == {"session_id", "output", "stop_reason"}
    assert result["output"] == ANSWER and result["stop_reason"] == "end_turn"
    # Its own session of the instance, holding the turn.
    messages = inst.call("message.list", {"session_id": result["session_id"]})
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "Summarize the repo."), ("assistant", ANSWER)]
    assert inst.call("session.get", {"session_id": result["session_id"]})["title"] == "delegated: corr-done"
    # Unattended: the model is not offered a question to the user.
    [request] = serve.llm.requests()
    tools = [t["function"]["name"] for t in request["body"].get("tools", [])]
    assert "request_user_input" not in tools
    assert inst.call("delegation.status", {"correlation_id": "corr-done"}) == {
        "state": "completed", **result}
    assert inst.call("delegation.status", {"correlation_id": "never-seen"}) == {"state": "unknown"}
    assert inst.call("delegation.status", {}) == {"state": "unknown"}


def test_delegation_errors_say_what_is_wrong(pando):
    _, [inst] = pando([])
    assert inst.error("delegation.run", {}) == (-32000, "delegation.run: prompt is required")
    code, message = inst.error("delegation.run")
    assert code == -32000 and message.startswith("delegation.run: invalid params: ")
    code, message = inst.error("delegation.run", {"prompt": "p", "cwd": "/"})
    assert code == -32000 and "outside the instance's directory" in message, message
    code, message = inst.error("delegation.run", {"prompt": "p", "persona": "nobody"})
    assert (code, message) == (
        -32000, 'delegation.run: unknown persona "nobody": no Gantry agent has that id or name')
    # Cancelling what is not running is fine, as in Pando.
    assert inst.call("delegation.cancel", {"correlation_id": "nothing"}) == {"ok": True}


def test_a_running_delegation_is_running_until_cancelled_then_unknown(pando):
    # The tool runs until the test is done with it (at most HANG_GUARD).
    wait = f"for i in $(seq {int(HANG_GUARD * 20)}); do [ -e release ] && exit 0; sleep 0.05; done"
    _, [inst] = pando([shell(wait)])
    runner = pando.ctx.socket(zmq.DEALER)
    runner.setsockopt(zmq.LINGER, 0)
    runner.connect(f"tcp://127.0.0.1:{inst.lock['rpc_port']}")
    run = {"jsonrpc": "2.0", "id": "run-1", "method": "delegation.run",
           "params": {"prompt": "Wait for the release.", "correlation_id": "corr-run"}}
    runner.send_multipart([b"", json.dumps(run).encode()])

    # Its tool is running: the delegation is in flight.
    started = inst.topic("tool.start")
    assert started["tool_name"] == "shell"
    deadline = time.monotonic() + HANG_GUARD
    while (state := inst.call("delegation.status", {"correlation_id": "corr-run"})) != {"state": "running"}:
        assert time.monotonic() < deadline, state
    assert not runner.poll(0), "delegation.run answered while its turn runs"

    assert inst.call("delegation.cancel", {"correlation_id": "corr-run"}) == {"ok": True}
    assert runner.poll(int(HANG_GUARD * 1000)), "delegation.run did not answer after the cancel"
    reply = json.loads(runner.recv_multipart()[-1])
    assert reply["id"] == "run-1" and "result" not in reply
    assert reply["error"] == {"code": -32000, "message": "delegation.run: delegated run: cancelled"}
    # As in Pando, only completed delegations are remembered.
    assert inst.call("delegation.status", {"correlation_id": "corr-run"}) == {"state": "unknown"}
    runner.close()


def jobs_of(serve, prefix="pando:"):
    """The jobs Gantry's HTTP API lists, of Pando instances, by name."""
    return {j["name"]: j for j in serve.get("/v1/jobs")["items"] if j["name"].startswith(prefix)}


def test_cronjob_reload_replaces_the_instances_jobs(pando):
    serve, [inst] = pando([], http=True)
    (inst.workdir / "sub").mkdir()
    first = {"enabled": True, "jobs": [
        {"name": "nightly", "schedule": "0 3 * * *", "prompt": "Tidy the logs.", "enabled": True,
         "timeout": "30m", "tags": ["ops"], "engine": "pando"},
        {"name": "weekly", "schedule": "0 9 * * 1", "prompt": "Report.", "enabled": False,
         "workDir": "sub"},
    ]}
    assert inst.call("cronjob.reload", {"cron_jobs": first}) == {"jobs": 2, "scheduler": True}
    jobs = jobs_of(serve)
    [prefix] = {name.rsplit(":", 1)[0] + ":" for name in jobs}
    assert sorted(jobs) == [prefix + "nightly", prefix + "weekly"]
    nightly, weekly = jobs[prefix + "nightly"], jobs[prefix + "weekly"]
    assert nightly["schedule"] == "0 3 * * *" and nightly["status"] == "active"
    assert nightly["timeout_ms"] == 30 * 60 * 1000
    assert nightly["action"]["kind"] == "prompt" and nightly["action"]["prompt"] == "Tidy the logs."
    assert weekly["status"] == "paused"
    # Each job's runs go to a session of its own, titled after the job.
    titles = {s["title"] for s in inst.call("session.list")}
    assert "cron nightly" in titles

    # Replaced: the old jobs are gone, the new one is there, paused with
    # the whole configuration off.
    second = {"enabled": False, "jobs": [
        {"name": "hourly", "schedule": "0 * * * *", "prompt": "Check.", "enabled": True}]}
    assert inst.call("cronjob.reload", {"cron_jobs": second}) == {"jobs": 1, "scheduler": True}
    jobs = jobs_of(serve)
    assert sorted(jobs) == [prefix + "hourly"] and jobs[prefix + "hourly"]["status"] == "paused"

    # A configuration that does not check out changes nothing.
    assert inst.error("cronjob.reload") == (-32000, "cronjob.reload: missing params")
    assert inst.error("cronjob.reload", {}) == (-32000, "cronjob.reload: missing cron_jobs")
    dup = {"enabled": True, "jobs": [{"name": "a", "schedule": "0 * * * *", "prompt": "p"}] * 2}
    assert inst.error("cronjob.reload", {"cron_jobs": dup}) == (
        -32000, 'cronjob.reload: duplicate cronjob name "a"')
    nameless = {"jobs": [{"schedule": "0 * * * *", "prompt": "p"}]}
    assert inst.error("cronjob.reload", {"cron_jobs": nameless}) == (
        -32000, "cronjob.reload: cronjobs.jobs[0].name is required")
    bad = {"jobs": [{"name": "b", "schedule": "not a schedule", "prompt": "p"}]}
    code, message = inst.error("cronjob.reload", {"cron_jobs": bad})
    assert code == -32000 and message.startswith('cronjob.reload: cronjob "b": invalid cron schedule'), message
    empty = {"jobs": [{"name": "c", "schedule": "0 * * * *", "prompt": " "}]}
    assert inst.error("cronjob.reload", {"cron_jobs": empty}) == (
        -32000, 'cronjob.reload: cronjob "c": prompt is required')
    assert sorted(jobs_of(serve)) == [prefix + "hourly"]

    # An empty configuration clears them.
    assert inst.call("cronjob.reload", {"cron_jobs": {"enabled": True, "jobs": []}}) == {
        "jobs": 0, "scheduler": True}
    assert jobs_of(serve) == {}


def test_db_compact_on_sqlite_reports_sizes(pando):
    _, [inst] = pando([{"reply": {"text": "ok"}}], storage="file")
    assert inst.call("message.send", {"session_id": "s1", "content": "x" * 20000}) == {"ok": True}
    inst.topic("llm.end")
    full = inst.call("db.compact")
    assert set(full) == {"mode", "size_before", "size_after", "freed"}
    assert full["mode"] == "full" and full["size_before"] > 0 and full["size_after"] > 0
    assert full["freed"] >= 0 and full["freed"] == full["size_before"] - full["size_after"]
    # Switching to incremental auto-vacuum adds pointer-map pages: the file
    # may grow by a page or so, which `freed` says.
    auto = inst.call("db.compact", {"enable_auto_vacuum": True})
    assert auto["mode"] == "full" and auto["size_before"] > 0
    assert auto["freed"] == auto["size_before"] - auto["size_after"] > -64 * 1024
    incremental = inst.call("db.compact", {"incremental": True})
    assert incremental["mode"] == "incremental" and incremental["freed"] >= 0
    # The store is whole after it.
    assert [m["role"] for m in inst.call("message.list", {"session_id": "s1"})] == ["user", "assistant"]
    code, message = inst.error("db.compact", {"incremental": "yes"})
    assert code == -32000 and message.startswith("db.compact: invalid params: ")


def test_db_compact_in_memory_says_so(pando):
    _, [inst] = pando([])
    assert inst.call("db.compact") == {"mode": "memory", "size_before": 0, "size_after": 0, "freed": 0}


def test_kb_relink_has_no_counterpart(pando):
    _, [inst] = pando([])
    code, message = inst.error("kb.relink", {"force": True})
    assert code == -32601 and "Gantry has no knowledge base" in message
    assert inst.error("no.such.method") == (-32601, "ipc: method not found")

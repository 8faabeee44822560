"""`gantry control-plane serve` with runners of companyhelm.runner.v1 0.7.0
that behave as CompanyHelm's does (v0_7_runner.CompanyHelmRunner): the
version detected at registration, agents kept by the control plane,
thread ids it picks, a full turn with command items over the HTTP API and
SSE, interrupt, thread delete, heartbeats and liveness, SDK status; and a
mixed fleet, a 0.2.0 `gantry runner` beside a 0.7.0 runner."""

import pytest

from conftest import Runner, reply, shell
from harness import MockLlm
from v0_7_runner import CompanyHelmRunner, ControlPlaneProcess


@pytest.fixture
def plane(tmp_path):
    started = []

    def start(*extra):
        cp = ControlPlaneProcess(tmp_path, *extra)
        started.append(cp)
        return cp

    yield start
    for cp in started:
        cp.stop()
        print(f"gantry control-plane said:\n{cp.stderr()}")


@pytest.fixture
def companyhelm(pb7):
    runners = []

    def connect(cp, token, **kwargs):
        runner = CompanyHelmRunner(pb7, cp.grpc, token, **kwargs)
        runners.append(runner)
        return runner

    yield connect
    for runner in runners:
        runner.close()


def runner_view(cp, name):
    _, runners = cp.api("GET", "/v1/runners")
    [found] = [r for r in runners if r["name"] == name]
    return found


def connected(cp, name):
    return cp.wait_until(f"runner {name} connected", lambda: runner_view(cp, name)["connected"] and runner_view(cp, name))


def test_a_companyhelm_runner_runs_a_full_turn_through_the_api(plane, companyhelm):
    cp = plane("--heartbeat-secs", "1")
    token = cp.add_runner("ch-1")
    runner = companyhelm(cp, token)
    view = connected(cp, "ch-1")
    assert (view["protocol"], view["protocol_pinned"], view["healthy"]) == ("0.7", False, True)
    assert [(s["name"], s["status"]) for s in view["sdks"]] == [("codex", "ready")]

    # The agent is the control plane's: nothing goes to the runner for it.
    status, agent = cp.api("POST", "/v1/agents", {"sdk": "codex", "model": "gpt-5"})
    assert status == 201, agent
    assert agent["runner_id"] == view["id"]
    status, thread = cp.api(
        "POST",
        f"/v1/agents/{agent['id']}/threads",
        {
            "reasoning_level": "high",
            "instructions": "Work in small steps.",
            "git_skill_packages": [
                {"repository_url": "https://github.com/acme/skills", "commit_reference": "main", "skills": ["review"]}
            ],
        },
    )
    assert status == 201, thread
    # The control plane picked the thread's id; the runner got it with the rest.
    sent = runner.threads[thread["id"]]
    assert (sent.model, sent.reasoning_level, sent.additional_model_instructions) == (
        "gpt-5",
        "high",
        "Work in small steps.",
    )
    assert len(sent.cli_secret) >= 32
    assert [(p.repository_url, p.commit_reference, [s.directory_path for s in p.skills]) for p in sent.git_skill_packages] == [
        ("https://github.com/acme/skills", "main", ["review"])
    ]
    assert "create_agent_request" not in str(runner.kinds())

    status, accepted = cp.api("POST", f"/v1/threads/{thread['id']}/messages", {"text": "list the files"})
    assert status == 202, accepted
    events = cp.events(thread["id"], lambda e: e["kind"] == "turn" and e["data"]["status"] == "completed")
    kinds = [(e["kind"], e["data"].get("type"), e["data"].get("status")) for e in events]
    assert [k for k in kinds if k[0] in ("turn", "item", "usage")] == [
        ("turn", None, "running"),
        ("item", "user_message", "running"),
        ("item", "user_message", "completed"),
        ("usage", None, None),
        ("item", "command_execution", "running"),
        ("item", "command_execution", "completed"),
        ("item", "file_change", "running"),
        ("item", "file_change", "completed"),
        ("item", "agent_message", "running"),
        ("item", "agent_message", "completed"),
        ("usage", None, None),
        ("turn", None, "completed"),
    ], kinds

    status, detail = cp.api("GET", f"/v1/threads/{thread['id']}")
    assert status == 200
    assert detail["name"] == "Workspace listing"
    usage = detail["token_usage"]
    # The last response's usage, and the thread's.
    assert (usage["turn_id"], usage["last"]["total_tokens"], usage["total"]["total_tokens"], usage["model_context_window"]) == (
        accepted["turn_id"],
        150,
        270,
        200000,
    )
    [turn] = detail["turns"]
    assert (turn["id"], turn["status"]) == (accepted["turn_id"], "completed")
    command = [i for i in turn["items"] if i["type"] == "command_execution"][0]
    assert (command["command"]["command"], command["command"]["output"]) == ("ls -la", "total 0\n")

    # Heartbeats went out and came back by their id all along.
    runner.wait_for("a heartbeat", lambda m: m.WhichOneof("request") == "heartbeat_request")


def test_interrupt_and_delete_reach_the_runner(plane, companyhelm):
    cp = plane()
    runner = companyhelm(cp, cp.add_runner("ch-1", "--protocol", "0.7"))
    assert connected(cp, "ch-1")["protocol_pinned"]
    _, agent = cp.api("POST", "/v1/agents", {"sdk": "codex", "model": "gpt-5"})
    _, thread = cp.api("POST", f"/v1/agents/{agent['id']}/threads", {})
    status, accepted = cp.api("POST", f"/v1/threads/{thread['id']}/messages", {"text": "block"})
    assert status == 202, accepted

    status, sent = cp.api("POST", f"/v1/threads/{thread['id']}/interrupt", {})
    assert status == 202, sent
    asked = runner.wait_for("the interrupt", lambda m: m.WhichOneof("request") == "interrupt_turn_request")
    assert (asked.request_id, asked.interrupt_turn_request.thread_id) == (sent["request_id"], thread["id"])
    # The runner answers with the turn's end only (the message's request
    # id, the cut message never ended): here the turn was interrupted, and
    # its message ended with it.
    events = cp.events(thread["id"], lambda e: e["kind"] == "turn" and e["data"]["status"] == "interrupted")
    assert [(e["data"].get("type"), e["data"]["status"]) for e in events[-2:]] == [
        ("agent_message", "interrupted"),
        (None, "interrupted"),
    ], events
    # Being interrupted from the ask until the runner said the turn ended.
    assert any(e["kind"] == "turn" and e["data"]["status"] == "interrupting" for e in events), events
    [turn] = cp.api("GET", f"/v1/threads/{thread['id']}")[1]["turns"]
    assert turn["status"] == "interrupted"
    assert [(i["type"], i["status"]) for i in turn["items"]] == [
        ("user_message", "completed"),
        ("agent_message", "interrupted"),
    ]
    # A message the runner answers with an error ends its turn as failed.
    status, accepted = cp.api("POST", f"/v1/threads/{thread['id']}/messages", {"text": "fail"})
    assert status == 202, accepted
    events = cp.events(thread["id"], lambda e: e["kind"] == "turn" and e["data"]["status"] == "failed")
    assert events[-1]["data"]["id"] == accepted["turn_id"], events

    status, deleted = cp.api("DELETE", f"/v1/threads/{thread['id']}")
    assert (status, deleted["status"]) == (200, "deleted"), deleted
    assert thread["id"] not in runner.threads
    status, refused = cp.api("POST", f"/v1/threads/{thread['id']}/interrupt", {})
    assert status == 409, refused
    # 0.7.0 has no skill installs: the API says where skills go instead.
    status, refused = cp.api("POST", f"/v1/agents/{agent['id']}/skills", {"package_name": "x"})
    assert status == 409 and "git_skill_packages" in refused["error"]["message"], refused


def test_a_runner_that_misses_heartbeats_or_whose_sdk_fails_gets_no_work(plane, companyhelm):
    cp = plane("--heartbeat-secs", "1")
    runner = companyhelm(cp, cp.add_runner("ch-1"))
    connected(cp, "ch-1")
    runner.wait_for("a heartbeat", lambda m: m.WhichOneof("request") == "heartbeat_request")

    runner.answer_heartbeats.clear()
    cp.wait_until("the runner is unhealthy", lambda: not runner_view(cp, "ch-1")["healthy"])
    status, refused = cp.api("POST", "/v1/agents", {"sdk": "codex"})
    # The real cause, as every route says it.
    assert status == 503, refused
    assert "unhealthy: it missed its heartbeats" in refused["error"]["message"], refused
    runner.answer_heartbeats.set()
    cp.wait_until("the runner is healthy again", lambda: runner_view(cp, "ch-1")["healthy"])
    status, agent = cp.api("POST", "/v1/agents", {"sdk": "codex", "model": "gpt-5"})
    assert status == 201, agent

    # An SDK in error takes no new agents, and its threads no new work.
    runner.sdk_update("codex", ["gpt-5"], "ERROR", error="login expired")
    cp.wait_until("the SDK is in error", lambda: runner_view(cp, "ch-1")["sdks"][0]["status"] == "error")
    status, refused = cp.api("POST", "/v1/agents", {"sdk": "codex"})
    assert status == 400 and "codex" in refused["error"]["message"], refused
    status, refused = cp.api("POST", f"/v1/agents/{agent['id']}/threads", {})
    assert status == 400 and "login expired" in refused["error"]["message"], refused


def test_a_mixed_fleet_serves_a_0_2_gantry_runner_and_a_0_7_runner(plane, companyhelm, tmp_path):
    cp = plane()
    companyhelm(cp, cp.add_runner("ch-1"))
    llm = MockLlm([shell("echo mixed fleet"), reply("Done.")], tmp_path)
    gantry = Runner(tmp_path, f"http://{cp.grpc}", cp.add_runner("gantry-1"), llm)
    try:
        assert connected(cp, "gantry-1")["protocol"] == "0.2"
        assert connected(cp, "ch-1")["protocol"] == "0.7"
        threads = {}
        for sdk, model in [("gantry", "mock/gpt-4.1"), ("codex", "gpt-5")]:
            status, agent = cp.api("POST", "/v1/agents", {"sdk": sdk, "model": model})
            assert status == 201, agent
            status, thread = cp.api("POST", f"/v1/agents/{agent['id']}/threads", {})
            assert status == 201, thread
            threads[sdk] = thread
            status, accepted = cp.api("POST", f"/v1/threads/{thread['id']}/messages", {"text": "go"})
            assert status == 202, accepted
        for sdk, thread in threads.items():
            events = cp.events(thread["id"], lambda e: e["kind"] == "turn" and e["data"]["status"] == "completed")
            commands = [e["data"] for e in events if e["data"].get("type") == "command_execution"]
            assert commands and commands[-1]["status"] == "completed", (sdk, events)
        runners = {r["name"]: r for r in cp.api("GET", "/v1/runners")[1]}
        assert threads["gantry"]["runner_id"] == runners["gantry-1"]["id"]
        assert threads["codex"]["runner_id"] == runners["ch-1"]["id"]
        # 0.2.0 has no interrupt.
        status, refused = cp.api("POST", f"/v1/threads/{threads['gantry']['id']}/interrupt", {})
        assert status == 409 and "0.2" in refused["error"]["message"], refused
    finally:
        gantry.stop()
        llm.close()
        print(f"gantry runner said:\n{gantry.stderr()}")

"""What A3S's own clients expect of the service beyond the seed: the
behaviours of A3S's server, and the rpcs of A3S's newer proto (served as a
superset of the seed's), end to end against the scripted model."""

import importlib
import json
import pathlib
import sys

from grpc_tools import protoc

from conftest import HANG_GUARD


NEWER_RPCS = [
    "RestoreSession", "GetSkill", "SearchSkills", "InstallSkill", "LoadSkillsFromDir",
    "DeleteMemory", "SummarizeMemories", "GetToolMetrics", "GetCostSummary", "GetQueueStats",
    "AgenticGenerate", "StreamAgenticGenerate", "Delegate", "StreamDelegate",
]

SKILL = """---
name: lint-fixer
description: Fix lint errors in Rust code
allowed-tools: Bash(cargo clippy:*), Read
---
Run clippy and fix what it reports.
"""


def ask(pb, session, text):
    return pb.GenerateRequest(session_id=session, messages=[pb.Message(role="user", content=text)])


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def test_check_permission_takes_a3s_tool_names_and_plain_commands(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([]))
    stub.AddPermissionRule(
        pb.AddPermissionRuleRequest(session_id=session, rule_type="deny", rule="Bash(rm:*)"), timeout=HANG_GUARD
    )
    stub.AddPermissionRule(
        pb.AddPermissionRuleRequest(session_id=session, rule_type="deny", rule="Read(secrets/**)"), timeout=HANG_GUARD
    )
    check = lambda tool, args: stub.CheckPermission(  # noqa: E731
        pb.CheckPermissionRequest(session_id=session, tool_name=tool, arguments=args), timeout=HANG_GUARD
    )
    denied = check("Bash", json.dumps({"command": "rm -rf build"}))
    assert denied.decision == pb.PERMISSION_DECISION_DENY
    assert any("Bash(rm:*)" in r for r in denied.matching_rules), denied.matching_rules
    assert check("bash", "rm -rf build").decision == pb.PERMISSION_DECISION_DENY
    assert check("Bash", "cargo test").decision == pb.PERMISSION_DECISION_ALLOW
    assert check("Read", json.dumps({"file_path": "secrets/key.pem"})).decision == pb.PERMISSION_DECISION_DENY
    assert check("LS", "{}").decision == pb.PERMISSION_DECISION_ALLOW


def test_an_inline_skill_is_the_servers(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([]))
    loaded = stub.LoadSkill(
        pb.LoadSkillRequest(session_id=session, skill_name="lint-fixer", skill_content=SKILL), timeout=HANG_GUARD
    )
    assert loaded.success
    listed = {s.name: s for s in stub.ListSkills(pb.ListSkillsRequest(), timeout=HANG_GUARD).skills}
    assert listed["lint-fixer"].allowed_tools == "Bash(cargo clippy:*), Read"
    assert listed["lint-fixer"].metadata["source"] == "inline"
    claude = stub.GetClaudeCodeSkills(pb.GetClaudeCodeSkillsRequest(name="lint-fixer"), timeout=HANG_GUARD)
    assert "Run clippy" in claude.skills[0].content
    got = stub.GetSkill(pb.GetSkillRequest(name="lint-fixer"), timeout=HANG_GUARD)
    assert [s.name for s in got.skills] == ["lint-fixer"] and "Run clippy" in got.skills[0].content
    assert not stub.GetSkill(pb.GetSkillRequest(name="nope"), timeout=HANG_GUARD).skills
    found = stub.SearchSkills(pb.SearchSkillsRequest(query="lint rust"), timeout=HANG_GUARD)
    assert [r.name for r in found.results] == ["lint-fixer"] and found.total_count == 1
    # A later session has it too.
    later = gantry.session(mock_llm([]))
    in_later = {s.name: s for s in stub.ListSkills(pb.ListSkillsRequest(session_id=later), timeout=HANG_GUARD).skills}
    assert in_later["lint-fixer"].metadata["loaded"] == "true"


def test_skills_load_from_a_directory_and_install_from_a_folder(gantry, tmp_path):
    pb, stub = gantry.pb, gantry.stub
    skills = tmp_path / "skills"
    (skills / "release").mkdir(parents=True)
    (skills / "release" / "SKILL.md").write_text("---\nname: release\ndescription: Cut a release\n---\nTag it.\n")
    (skills / "review.md").write_text("---\nname: review\ndescription: Review a diff\n---\nRead it.\n")
    (skills / "broken.md").write_text("---\nname: \n---\n")
    loaded = stub.LoadSkillsFromDir(pb.LoadSkillsFromDirRequest(directory=str(skills)), timeout=HANG_GUARD)
    assert sorted(loaded.loaded_skills) == ["release", "review"]
    assert not loaded.success and len(loaded.errors) == 1 and "broken.md" in loaded.errors[0]
    names = {s.name for s in stub.GetSkill(pb.GetSkillRequest(), timeout=HANG_GUARD).skills}
    assert {"release", "review"} <= names

    package = tmp_path / "pkg" / "deploy"
    package.mkdir(parents=True)
    (package / "SKILL.md").write_text("---\nname: deploy\ndescription: Deploy it\n---\nShip.\n")
    installed = stub.InstallSkill(pb.InstallSkillRequest(source=str(package)), timeout=HANG_GUARD)
    assert installed.success and installed.skill_name == "deploy", installed
    assert (gantry.workspace / ".gantry" / "skills" / "deploy" / "SKILL.md").is_file()
    bad = stub.InstallSkill(pb.InstallSkillRequest(source=str(tmp_path / "nothing-here")), timeout=HANG_GUARD)
    assert not bad.success and bad.message


def test_an_unknown_confirmation_is_success_false(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([]))
    reply = stub.ConfirmToolExecution(
        pb.ConfirmToolExecutionRequest(session_id=session, tool_id="no-such-call", approved=True), timeout=HANG_GUARD
    )
    assert not reply.success and "no-such-call" in reply.error


def test_agentic_generate_reports_steps_tools_and_usage(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([
        {"reply": {"text": "Looking.", "tool_calls": [call("shell", command="echo agentic")]}},
        {"reply": {"text": "It said agentic."}},
    ])
    session = gantry.session(llm)
    done = stub.AgenticGenerate(pb.AgenticGenerateRequest(session_id=session, prompt="run it"), timeout=HANG_GUARD)
    assert done.text == "It said agentic." and done.finish_reason == "stop"
    assert [s.step_index for s in done.steps] == [1, 2]
    assert done.steps[0].tool_calls[0].name == "bash"
    assert "agentic" in done.steps[0].tool_results[0].output
    assert done.tool_calls[0].result.success and done.usage.total_tokens > 0


def test_stream_agentic_generate_streams_then_says_done(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([
        {"reply": {"tool_calls": [call("shell", command="echo streamed")]}},
        {"reply": {"text": "Streamed."}},
    ])
    session = gantry.session(llm)
    events = list(stub.StreamAgenticGenerate(
        pb.AgenticGenerateRequest(session_id=session, prompt="go"), timeout=HANG_GUARD
    ))
    kinds = [e.type for e in events]
    assert kinds[0] == "tool_call" and kinds[-1] == "done", kinds
    assert kinds.index("tool_result") < kinds.index("step_finish") < kinds.index("text"), kinds
    assert events[-1].finish_reason == "stop" and events[-1].content == "Streamed."
    assert all(e.session_id == session for e in events)


def test_max_steps_stops_the_loop(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    loop = [{"reply": {"tool_calls": [call("shell", command=f"echo {i}")]}} for i in range(6)]
    session = gantry.session(mock_llm(loop + [{"reply": {"text": "never"}}]))
    done = stub.AgenticGenerate(
        pb.AgenticGenerateRequest(session_id=session, prompt="loop", max_steps=2), timeout=HANG_GUARD
    )
    assert done.finish_reason == "max_steps"
    assert len(done.steps) <= 4, [s.step_index for s in done.steps]


def test_delegate_runs_a_read_only_sub_agent_in_its_own_session(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    (gantry.workspace / "notes.txt").write_text("the answer is 42")
    llm = mock_llm([
        {"reply": {"tool_calls": [call("read_file", path="notes.txt")]}},
        {"reply": {"tool_calls": [call("shell", command="touch made.txt")]}},
        {"reply": {"text": "The notes say 42."}},
    ])
    parent = gantry.session(llm)
    done = stub.Delegate(
        pb.DelegateRequest(session_id=parent, agent_name="explore", task="what do the notes say?"),
        timeout=HANG_GUARD,
    )
    assert done.text == "The notes say 42." and done.finish_reason == "stop"
    assert done.agent_session_id and done.agent_session_id != parent
    read, shell = done.tool_calls
    assert read.name == "read" and read.result.success and "42" in read.result.output
    assert shell.name == "bash" and not shell.result.success  # explore changes nothing
    assert not (gantry.workspace / "made.txt").exists()
    child = stub.GetMessages(pb.GetMessagesRequest(session_id=done.agent_session_id), timeout=HANG_GUARD)
    assert child.messages[0].content[0].text.text == "what do the notes say?"
    code = None
    try:
        stub.Delegate(pb.DelegateRequest(session_id=parent, agent_name="nobody", task="x"), timeout=HANG_GUARD)
    except Exception as e:  # noqa: BLE001
        code = e.code()
    assert code is not None and code.name == "NOT_FOUND"


def test_a_general_sub_agent_keeps_its_parents_policy(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([
        {"reply": {"tool_calls": [call("shell", command="touch made.txt"), call("shell", command="echo fine")]}},
        {"reply": {"text": "One was refused."}},
    ])
    parent = gantry.session(llm)
    stub.AddPermissionRule(
        pb.AddPermissionRuleRequest(session_id=parent, rule_type="deny", rule="Bash(touch:*)"), timeout=HANG_GUARD
    )
    done = stub.Delegate(
        pb.DelegateRequest(session_id=parent, agent_name="general", task="make a file"), timeout=HANG_GUARD
    )
    touch, echo = done.tool_calls
    assert not touch.result.success, "the parent's deny rule holds in the sub-agent"
    assert not (gantry.workspace / "made.txt").exists()
    assert echo.result.success and "fine" in echo.result.output
    policy = stub.GetPermissionPolicy(
        pb.GetPermissionPolicyRequest(session_id=done.agent_session_id), timeout=HANG_GUARD
    ).policy
    assert "Bash(touch:*)" in [r.rule for r in policy.deny], policy


def test_stream_delegate_brackets_the_sub_agents_events(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    parent = gantry.session(mock_llm([{"reply": {"text": "Planned."}}]))
    events = list(stub.StreamDelegate(
        pb.DelegateRequest(session_id=parent, agent_name="plan", task="plan it"), timeout=HANG_GUARD
    ))
    kinds = [e.type for e in events]
    assert kinds[0] == "subagent_start" and kinds[-2:] == ["subagent_end", "done"], kinds
    assert events[0].agent_session_id and events[0].agent_session_id == events[-2].agent_session_id
    assert events[-2].agent_result == "Planned."
    assert all(e.session_id == parent for e in events)


def test_tool_metrics_costs_and_queue_stats_come_from_the_record(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([
        {"reply": {"tool_calls": [call("shell", command="true"), call("shell", command="false")]}},
        {"reply": {"text": "ok"}},
    ])
    session = gantry.session(llm)
    stub.Generate(ask(pb, session, "run both"), timeout=HANG_GUARD)
    metrics = stub.GetToolMetrics(pb.GetToolMetricsRequest(session_id=session), timeout=HANG_GUARD)
    [bash] = metrics.tools
    assert bash.tool_name == "bash" and bash.total_calls == 2
    assert bash.success_count == 1 and bash.failure_count == 1 and bash.last_called_at.endswith("Z")
    assert metrics.total_calls == 2
    only = stub.GetToolMetrics(pb.GetToolMetricsRequest(session_id=session, tool_name="Read"), timeout=HANG_GUARD)
    assert not only.tools

    cost = stub.GetCostSummary(pb.GetCostSummaryRequest(session_id=session), timeout=HANG_GUARD)
    assert cost.call_count == 2 and cost.total_tokens == cost.total_prompt_tokens + cost.total_completion_tokens > 0
    assert [m.model for m in cost.by_model] == ["gpt-4.1-mini"] and len(cost.by_day) == 1
    everyone = stub.GetCostSummary(pb.GetCostSummaryRequest(), timeout=HANG_GUARD)
    assert everyone.total_tokens == cost.total_tokens
    future = stub.GetCostSummary(pb.GetCostSummaryRequest(start_date="2999-01-01"), timeout=HANG_GUARD)
    assert future.call_count == 0

    queue = stub.GetQueueStats(pb.GetQueueStatsRequest(session_id=session), timeout=HANG_GUARD)
    assert queue.execute.completed == 1 and queue.execute.failed == 1
    assert queue.generate.completed == 1 and queue.generate.active == 0


def test_costs_are_counted_under_the_model_each_turn_ran_with(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([{"reply": {"text": "one"}}, {"reply": {"text": "two"}}])
    session = gantry.session(llm)
    stub.Generate(ask(pb, session, "first"), timeout=HANG_GUARD)
    stub.ConfigureSession(
        pb.ConfigureSessionRequest(session_id=session, config=pb.SessionConfig(llm=gantry.llm_config(llm, model="gpt-5"))),
        timeout=HANG_GUARD,
    )
    stub.Generate(ask(pb, session, "second"), timeout=HANG_GUARD)
    cost = stub.GetCostSummary(pb.GetCostSummaryRequest(session_id=session), timeout=HANG_GUARD)
    assert {m.model: m.call_count for m in cost.by_model} == {"gpt-4.1-mini": 1, "gpt-5": 1}
    first = stub.GetCostSummary(pb.GetCostSummaryRequest(session_id=session, model="gpt-4.1-mini"), timeout=HANG_GUARD)
    assert first.call_count == 1 and [m.model for m in first.by_model] == ["gpt-4.1-mini"]


def test_reflection_lists_the_newer_rpcs(gantry, tmp_path):
    here = pathlib.Path(__file__).resolve().parent / "reflection"
    out = tmp_path / "reflection_stubs"
    out.mkdir()
    assert protoc.main(["protoc", f"-I{here}", f"--python_out={out}", f"--grpc_python_out={out}",
                        str(here / "reflection.proto")]) == 0
    sys.path.insert(0, str(out))
    messages = importlib.import_module("reflection_pb2")
    stubs = importlib.import_module("reflection_pb2_grpc")
    from google.protobuf import descriptor_pb2

    reflection = stubs.ServerReflectionStub(gantry.channel)
    requests = iter([messages.ServerReflectionRequest(file_containing_symbol="a3s.code.agent.v1.CodeAgentService")])
    [reply] = list(reflection.ServerReflectionInfo(requests, timeout=HANG_GUARD))
    methods = set()
    for raw in reply.file_descriptor_response.file_descriptor_proto:
        file = descriptor_pb2.FileDescriptorProto.FromString(raw)
        for service in file.service:
            if service.name == "CodeAgentService":
                methods |= {m.name for m in service.method}
    assert set(NEWER_RPCS) <= methods, set(NEWER_RPCS) - methods
    assert "GetClaudeCodeSkills" in methods and len(methods) == 91

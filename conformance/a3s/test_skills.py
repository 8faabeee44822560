"""Skills: the workspace's, and loading them into a session."""

import grpc

from conftest import HANG_GUARD, code_of


def write_skill(gantry, folder, name, front_matter, body):
    skill = gantry.workspace / folder / name
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: {name}\n{front_matter}---\n{body}\n")


def with_skills(gantry):
    write_skill(gantry, ".gantry/skills", "gh-helper",
                "description: Use the GitHub CLI\nallowed-tools: Bash(gh:*), Read\n", "Run gh pr list first.")
    write_skill(gantry, ".claude/skills", "release",
                "description: Cut a release\ndisable-model-invocation: true\n", "Tag it vX.Y.Z.")


def test_workspace_skills_are_listed_and_read_whole(gantry):
    pb, stub = gantry.pb, gantry.stub
    with_skills(gantry)
    listed = {s.name: s for s in stub.ListSkills(pb.ListSkillsRequest(), timeout=HANG_GUARD).skills}
    assert set(listed) == {"gh-helper", "release"}
    assert listed["gh-helper"].allowed_tools == "Bash(gh:*), Read"
    assert listed["release"].metadata["model_invocable"] == "false"

    every = stub.GetClaudeCodeSkills(pb.GetClaudeCodeSkillsRequest(), timeout=HANG_GUARD).skills
    assert sorted(s.name for s in every) == ["gh-helper", "release"]
    [gh] = stub.GetClaudeCodeSkills(pb.GetClaudeCodeSkillsRequest(name="gh-helper"), timeout=HANG_GUARD).skills
    assert gh.allowed_tools == "Bash(gh:*), Read" and gh.content == "Run gh pr list first."
    assert not gh.disable_model_invocation
    code, _ = code_of(lambda: stub.GetClaudeCodeSkills(pb.GetClaudeCodeSkillsRequest(name="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND


def test_skills_are_loaded_into_a_session_and_reach_the_model(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    with_skills(gantry)
    llm = mock_llm([{"reply": {"text": "tagged"}}])
    session = gantry.session(llm)
    loaded = stub.LoadSkill(pb.LoadSkillRequest(session_id=session, skill_name="release"), timeout=HANG_GUARD)
    assert loaded.success and not loaded.tool_names
    inline = "---\nname: lint-fixer\ndescription: Fix lints\nallowed-tools: Bash(cargo clippy:*)\n---\nRun clippy.\n"
    added = stub.LoadSkill(pb.LoadSkillRequest(session_id=session, skill_content=inline), timeout=HANG_GUARD)
    assert list(added.tool_names) == ["Bash(cargo clippy:*)"]
    listed = {s.name: s for s in stub.ListSkills(pb.ListSkillsRequest(session_id=session), timeout=HANG_GUARD).skills}
    assert listed["release"].metadata["loaded"] == "true"
    assert listed["gh-helper"].metadata["loaded"] == "false"
    assert listed["lint-fixer"].metadata["source"] == "inline"

    stub.Generate(
        pb.GenerateRequest(session_id=session, messages=[pb.Message(role="user", content="cut 1.2.0")]),
        timeout=HANG_GUARD,
    )
    assert "Tag it vX.Y.Z." in llm.requests()[0]["body"]["messages"][0]["content"]

    removed = stub.UnloadSkill(pb.UnloadSkillRequest(session_id=session, skill_name="lint-fixer"), timeout=HANG_GUARD)
    assert removed.success and list(removed.removed_tools) == ["Bash(cargo clippy:*)"]
    code, _ = code_of(lambda: stub.UnloadSkill(pb.UnloadSkillRequest(session_id=session, skill_name="gh-helper"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.FAILED_PRECONDITION


def test_skill_errors(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    with_skills(gantry)
    session = gantry.session(mock_llm([]))
    code, details = code_of(lambda: stub.LoadSkill(pb.LoadSkillRequest(session_id=session, skill_name="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND and "gh-helper" in details
    code, details = code_of(lambda: stub.LoadSkill(pb.LoadSkillRequest(session_id=session), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("skill_name:")
    code, details = code_of(
        lambda: stub.LoadSkill(pb.LoadSkillRequest(session_id=session, skill_content="not a skill"), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("skill_content:")
    code, _ = code_of(lambda: stub.UnloadSkill(pb.UnloadSkillRequest(session_id=session, skill_name="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    code, _ = code_of(lambda: stub.ListSkills(pb.ListSkillsRequest(session_id="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND

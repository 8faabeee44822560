"""Plans and goals, answered by the model through structured output."""

import grpc

from conftest import HANG_GUARD, code_of


def submit(payload):
    return {"reply": {"tool_calls": [{"name": "submit_output", "arguments": payload}]}}


PLAN = {
    "goal": "Add a --verbose flag",
    "steps": [
        {"id": "1", "description": "Find the parser", "tool": "grep"},
        {"id": "2", "description": "Add the flag", "dependencies": ["1"], "success_criteria": ["--verbose works"]},
    ],
    "complexity": "medium",
    "required_tools": ["grep", "edit_file"],
    "estimated_steps": 2,
}


def test_a_plan_is_made_and_read_back(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([submit(PLAN)])
    session = gantry.session(llm)
    code, _ = code_of(lambda: stub.GetPlan(pb.GetPlanRequest(session_id=session), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    plan = stub.CreatePlan(
        pb.CreatePlanRequest(session_id=session, prompt="add a --verbose flag", context="a Rust CLI"), timeout=HANG_GUARD
    ).plan
    assert plan.goal == "Add a --verbose flag" and plan.complexity == pb.COMPLEXITY_MEDIUM
    assert [s.id for s in plan.steps] == ["1", "2"] and plan.steps[0].tool == "grep"
    assert list(plan.steps[1].dependencies) == ["1"]
    assert all(s.status == pb.STEP_STATUS_PENDING for s in plan.steps)
    assert "a Rust CLI" in str(llm.requests()[0]["body"])
    latest = stub.GetPlan(pb.GetPlanRequest(session_id=session), timeout=HANG_GUARD).plan
    assert latest == plan
    code, _ = code_of(lambda: stub.GetPlan(pb.GetPlanRequest(session_id=session, plan_id="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND


def test_a_goal_is_extracted_and_checked(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([
        submit({"description": "Make the build pass", "success_criteria": ["it builds", "tests pass"]}),
        submit({"achieved": True, "progress": 1.0, "remaining_criteria": []}),
    ])
    session = gantry.session(llm)
    goal = stub.ExtractGoal(pb.ExtractGoalRequest(session_id=session, prompt="fix the build"), timeout=HANG_GUARD).goal
    assert goal.description == "Make the build pass" and list(goal.success_criteria) == ["it builds", "tests pass"]
    assert not goal.achieved and goal.created_at > 0
    check = stub.CheckGoalAchievement(
        pb.CheckGoalAchievementRequest(session_id=session, goal=goal, current_state="builds, tests green"), timeout=HANG_GUARD
    )
    assert check.achieved and check.progress == 1.0 and not check.remaining_criteria
    assert "tests green" in str(llm.requests()[1]["body"])


def test_planning_errors(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([{"reply": {"text": "I'd rather not plan."}}]))
    code, _ = code_of(lambda: stub.CreatePlan(pb.CreatePlanRequest(session_id=session, prompt="plan"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.ABORTED
    code, details = code_of(lambda: stub.CreatePlan(pb.CreatePlanRequest(session_id=session), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("prompt:")
    code, details = code_of(lambda: stub.ExtractGoal(pb.ExtractGoalRequest(session_id=session), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("prompt:")
    code, details = code_of(
        lambda: stub.CheckGoalAchievement(pb.CheckGoalAchievementRequest(session_id=session, current_state="x"), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("goal:")
    code, _ = code_of(lambda: stub.ExtractGoal(pb.ExtractGoalRequest(session_id="nope", prompt="x"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND

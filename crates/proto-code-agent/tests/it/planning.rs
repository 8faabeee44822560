//! Plans and goals over the wire: the model answers through the engine's
//! `submit_output` tool, and the rpcs return typed results; plans are read
//! back; the errors.

use crate::common;

use common::{Server, guard};
use gantry_testkit::Step;
use gantry_types::ThreadId;
use proto_code_agent::pb;
use serde_json::json;
use tonic::Code;

fn plan_step() -> Step {
    Step::tool_call(
        "submit_output",
        json!({
            "goal": "Add a --verbose flag",
            "steps": [
                {"id": "1", "description": "Find the argument parser", "tool": "grep",
                 "success_criteria": ["parser located"]},
                {"id": "2", "description": "Add the flag", "dependencies": ["1"]}
            ],
            "complexity": "very_complex",
            "required_tools": ["grep", "edit_file"]
        }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_is_created_by_the_model_and_read_back() {
    let mut s = Server::start(vec![plan_step()]).await;
    let session = s.session().await;
    let err = s
        .client
        .get_plan(pb::GetPlanRequest {
            session_id: session.clone(),
            plan_id: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "no plan yet: {err:?}");

    let plan = guard(
        "the plan",
        s.client.create_plan(pb::CreatePlanRequest {
            session_id: session.clone(),
            prompt: "add a --verbose flag".into(),
            context: Some("a Rust CLI".into()),
        }),
    )
    .await
    .unwrap()
    .into_inner()
    .plan
    .unwrap();
    assert_eq!(plan.goal, "Add a --verbose flag");
    assert_eq!(plan.complexity(), pb::Complexity::VeryComplex);
    assert_eq!(plan.required_tools, ["grep", "edit_file"]);
    assert_eq!(
        plan.estimated_steps, 2,
        "the engine counts the steps when the model gives none"
    );
    assert_eq!(plan.steps.len(), 2);
    assert_eq!(plan.steps[0].tool.as_deref(), Some("grep"));
    assert_eq!(plan.steps[0].success_criteria, ["parser located"]);
    assert_eq!(plan.steps[1].dependencies, ["1"]);
    assert!(
        plan.steps
            .iter()
            .all(|st| st.status() == pb::StepStatus::Pending)
    );
    let asked = s.llm.requests()[0].body.to_string();
    assert!(
        asked.contains("add a --verbose flag") && asked.contains("a Rust CLI"),
        "{asked}"
    );

    // An empty plan id reads the latest plan; the engine's id reads it too.
    let latest = s
        .client
        .get_plan(pb::GetPlanRequest {
            session_id: session.clone(),
            plan_id: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .plan
        .unwrap();
    assert_eq!(latest, plan);
    let view = s
        .engine
        .threads()
        .read(&ThreadId::from(session.as_str()))
        .await
        .unwrap();
    let by_id = s
        .client
        .get_plan(pb::GetPlanRequest {
            session_id: session.clone(),
            plan_id: view.plans[0].id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .plan
        .unwrap();
    assert_eq!(by_id, plan);
    let err = s
        .client
        .get_plan(pb::GetPlanRequest {
            session_id: session.clone(),
            plan_id: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goals_are_extracted_and_checked() {
    let mut s = Server::start(vec![
        Step::tool_call(
            "submit_output",
            json!({"description": "Make the build pass",
                   "success_criteria": ["cargo build succeeds", "cargo test passes"]}),
        ),
        Step::tool_call(
            "submit_output",
            json!({"achieved": false, "progress": 0.5, "remaining_criteria": ["cargo test passes"]}),
        ),
    ])
    .await;
    let session = s.session().await;
    let goal = guard(
        "the goal",
        s.client.extract_goal(pb::ExtractGoalRequest {
            session_id: session.clone(),
            prompt: "the build is red, fix it".into(),
        }),
    )
    .await
    .unwrap()
    .into_inner()
    .goal
    .unwrap();
    assert_eq!(goal.description, "Make the build pass");
    assert_eq!(
        goal.success_criteria,
        ["cargo build succeeds", "cargo test passes"]
    );
    assert!(!goal.achieved && goal.progress == 0.0 && goal.achieved_at.is_none());
    assert!(goal.created_at > 0);

    let check = guard(
        "the check",
        s.client
            .check_goal_achievement(pb::CheckGoalAchievementRequest {
                session_id: session.clone(),
                goal: Some(goal),
                current_state: "it builds; 2 tests fail".into(),
            }),
    )
    .await
    .unwrap()
    .into_inner();
    assert!(!check.achieved);
    assert_eq!(check.progress, 0.5);
    assert_eq!(check.remaining_criteria, ["cargo test passes"]);
    let asked = s.llm.requests()[1].body.to_string();
    assert!(
        asked.contains("- cargo test passes") && asked.contains("2 tests fail"),
        "{asked}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planning_errors_carry_the_right_status() {
    // The model never submits a valid plan: it answers in prose.
    let mut s = Server::start(vec![
        Step::tool_call("submit_output", json!({"goal": ""})),
        Step::text("I'd rather just do it."),
    ])
    .await;
    let session = s.session().await;
    let err = guard(
        "the plan",
        s.client.create_plan(pb::CreatePlanRequest {
            session_id: session.clone(),
            prompt: "plan it".into(),
            context: None,
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), Code::Aborted, "{err:?}");

    let err = s
        .client
        .create_plan(pb::CreatePlanRequest {
            session_id: session.clone(),
            prompt: " ".into(),
            context: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("prompt:"), "{err:?}");
    let err = s
        .client
        .extract_goal(pb::ExtractGoalRequest {
            session_id: session.clone(),
            prompt: String::new(),
        })
        .await
        .unwrap_err();
    assert!(err.message().starts_with("prompt:"), "{err:?}");
    let check = |goal: Option<pb::AgentGoal>, state: &str| pb::CheckGoalAchievementRequest {
        session_id: session.clone(),
        goal,
        current_state: state.into(),
    };
    let goal = pb::AgentGoal {
        description: "ship".into(),
        ..Default::default()
    };
    for (req, field) in [
        (check(None, "done"), "goal:"),
        (
            check(Some(pb::AgentGoal::default()), "done"),
            "goal.description:",
        ),
        (check(Some(goal), ""), "current_state:"),
    ] {
        let err = s.client.check_goal_achievement(req).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        assert!(err.message().starts_with(field), "{err:?}");
    }

    let unreachable = s
        .client
        .create_session(pb::CreateSessionRequest {
            config: Some(pb::SessionConfig {
                llm: Some(pb::LlmConfig {
                    base_url: "http://127.0.0.1:9".into(),
                    ..s.llm_config()
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .session_id;
    let err = guard(
        "the goal",
        s.client.extract_goal(pb::ExtractGoalRequest {
            session_id: unreachable,
            prompt: "fix it".into(),
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");

    let err = s
        .client
        .get_plan(pb::GetPlanRequest {
            session_id: "nope".into(),
            plan_id: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
}

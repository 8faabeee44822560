//! Plans and goals. Each is a structured-output turn of the session: the
//! model submits JSON the engine checks against a schema, so it sees the
//! session's history, counts toward its usage, and is refused while
//! another turn runs (`FAILED_PRECONDITION`).
//!
//! The proto's `ExecutionPlan` has no id. Plans are stored on the session
//! with the engine's id; `GetPlan` with an empty `plan_id` returns the
//! session's latest plan, which is how a gRPC client reads back the plan
//! `CreatePlan` made (with an id, the plan of that id, as other protocols
//! and the session's events name it).

use gantry_core::EngineError;
use gantry_types::{AgentGoal, Complexity, ExecutionPlan, PlanStep, PlanStepStatus, TurnFailure};
use tonic::Status;

use super::Ctx;
use crate::pb;
use crate::status::{required, session_id, status, turn_failed};

/// `CreatePlan`: the model plans the task in `prompt` (with `context`, if
/// given) without carrying it out; the plan is stored on the session,
/// every step pending.
pub(crate) async fn create_plan(
    ctx: &Ctx,
    req: pb::CreatePlanRequest,
) -> Result<pb::CreatePlanResponse, Status> {
    let id = session_id(&req.session_id)?;
    let prompt = required("prompt", &req.prompt)?;
    let plan = ctx
        .engine
        .plans()
        .create(&id, prompt, req.context.as_deref())
        .await
        .map_err(structured_status)?;
    Ok(pb::CreatePlanResponse {
        plan: Some(execution_plan(plan)),
    })
}

/// `GetPlan`: the session's plan with id `plan_id`, or its latest plan
/// when `plan_id` is empty; `NOT_FOUND` if there is none.
pub(crate) async fn get_plan(
    ctx: &Ctx,
    req: pb::GetPlanRequest,
) -> Result<pb::GetPlanResponse, Status> {
    let id = session_id(&req.session_id)?;
    let plan = match req.plan_id.trim() {
        "" => {
            let view = ctx.engine.threads().read(&id).await.map_err(status)?;
            // The newest by creation (the last of equals: stored later).
            view.plans
                .iter()
                .max_by_key(|p| p.created_at)
                .cloned()
                .ok_or_else(|| Status::not_found(format!("session {id} has no plan")))?
        }
        plan_id => ctx.engine.plans().get(&id, plan_id).await.map_err(status)?,
    };
    Ok(pb::GetPlanResponse {
        plan: Some(execution_plan(plan)),
    })
}

/// `ExtractGoal`: the model states the goal of `prompt` with success
/// criteria someone could check; progress 0, not achieved.
pub(crate) async fn extract_goal(
    ctx: &Ctx,
    req: pb::ExtractGoalRequest,
) -> Result<pb::ExtractGoalResponse, Status> {
    let id = session_id(&req.session_id)?;
    let prompt = required("prompt", &req.prompt)?;
    let goal = ctx
        .engine
        .goals()
        .extract(&id, prompt)
        .await
        .map_err(structured_status)?;
    Ok(pb::ExtractGoalResponse {
        goal: Some(agent_goal(goal)),
    })
}

/// `CheckGoalAchievement`: the model judges how far `goal` is achieved in
/// `current_state`: achieved only when every criterion is met, progress
/// from 0 to 1, and the criteria not met yet.
pub(crate) async fn check_goal_achievement(
    ctx: &Ctx,
    req: pb::CheckGoalAchievementRequest,
) -> Result<pb::CheckGoalAchievementResponse, Status> {
    let id = session_id(&req.session_id)?;
    let goal = req
        .goal
        .ok_or_else(|| Status::invalid_argument("goal: required"))?;
    required("goal.description", &goal.description)?;
    let current_state = required("current_state", &req.current_state)?;
    let check = ctx
        .engine
        .goals()
        .check_achievement(&id, &engine_goal(goal), current_state)
        .await
        .map_err(structured_status)?;
    Ok(pb::CheckGoalAchievementResponse {
        achieved: check.achieved,
        progress: check.progress,
        remaining_criteria: check.remaining_criteria,
    })
}

/// The status of a failed structured turn: the model's own failure as a
/// turn's (`UNAVAILABLE` for an unreachable server, `FAILED_PRECONDITION`
/// for no usable model), else as the engine error maps (`ABORTED` when the
/// model gave no valid output).
fn structured_status(error: EngineError) -> Status {
    match &error {
        EngineError::Structured {
            reason,
            failure: Some(failure @ (TurnFailure::ModelUnreachable | TurnFailure::ModelUnusable)),
            ..
        } => turn_failed(Some(*failure), reason),
        _ => status(error),
    }
}

/// A plan as the proto's `ExecutionPlan` (without its id, which the proto
/// has no field for).
fn execution_plan(plan: ExecutionPlan) -> pb::ExecutionPlan {
    let complexity = match plan.complexity {
        Complexity::Simple => pb::Complexity::Simple,
        Complexity::Medium => pb::Complexity::Medium,
        Complexity::Complex => pb::Complexity::Complex,
        Complexity::VeryComplex => pb::Complexity::VeryComplex,
    };
    pb::ExecutionPlan {
        goal: plan.goal,
        steps: plan.steps.into_iter().map(plan_step).collect(),
        complexity: complexity.into(),
        required_tools: plan.required_tools,
        estimated_steps: plan.estimated_steps,
    }
}

/// A plan step as the proto's `PlanStep`.
fn plan_step(step: PlanStep) -> pb::PlanStep {
    let status = match step.status {
        PlanStepStatus::Pending => pb::StepStatus::Pending,
        PlanStepStatus::InProgress => pb::StepStatus::InProgress,
        PlanStepStatus::Completed => pb::StepStatus::Completed,
        PlanStepStatus::Failed => pb::StepStatus::Failed,
        PlanStepStatus::Skipped => pb::StepStatus::Skipped,
    };
    pb::PlanStep {
        id: step.id,
        description: step.description,
        tool: step.tool,
        dependencies: step.dependencies,
        status: status.into(),
        success_criteria: step.success_criteria,
    }
}

/// A goal as the proto's `AgentGoal`.
fn agent_goal(goal: AgentGoal) -> pb::AgentGoal {
    pb::AgentGoal {
        description: goal.description,
        success_criteria: goal.success_criteria,
        progress: goal.progress,
        achieved: goal.achieved,
        created_at: goal.created_at,
        achieved_at: goal.achieved_at,
    }
}

/// A client's goal for the engine to check against.
fn engine_goal(goal: pb::AgentGoal) -> AgentGoal {
    AgentGoal {
        description: goal.description,
        success_criteria: goal.success_criteria,
        progress: goal.progress,
        achieved: goal.achieved,
        created_at: goal.created_at,
        achieved_at: goal.achieved_at,
    }
}

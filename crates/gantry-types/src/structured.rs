//! Structured results the model produces through `submit_output` (plans,
//! goals), and the thread goal with its token budget.

use serde::{Deserialize, Serialize};

use crate::ThreadId;

/// Where a plan step is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStepStatus {
    /// Not started.
    #[default]
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
    /// Tried and failed.
    Failed,
    /// Deliberately not done.
    Skipped,
}

/// How hard a task looks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Complexity {
    /// One or two obvious steps.
    Simple,
    /// A handful of steps.
    #[default]
    Medium,
    /// Many steps or real uncertainty.
    Complex,
    /// Large, risky, or spanning many parts.
    VeryComplex,
}

/// One step of an [`ExecutionPlan`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    /// Unique within the plan (`"1"`, `"setup"`, ...).
    pub id: String,
    /// What the step does.
    pub description: String,
    /// The tool the step mainly uses, if one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Ids of the steps that must be done first.
    #[serde(default)]
    pub dependencies: Vec<String>,
    /// Where the step is.
    #[serde(default)]
    pub status: PlanStepStatus,
    /// How to tell the step is done.
    #[serde(default)]
    pub success_criteria: Vec<String>,
}

/// A plan the model made for a task, stored on its thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionPlan {
    /// Id the plan is read back with; given by the engine, not the model.
    #[serde(default)]
    pub id: String,
    /// What the plan achieves.
    pub goal: String,
    /// The steps, in a workable order.
    pub steps: Vec<PlanStep>,
    /// How hard the task looks.
    #[serde(default)]
    pub complexity: Complexity,
    /// Tools the plan needs.
    #[serde(default)]
    pub required_tools: Vec<String>,
    /// The model's estimate of the steps needed.
    #[serde(default)]
    pub estimated_steps: u32,
    /// When it was stored, unix milliseconds.
    #[serde(default)]
    pub created_at: i64,
    /// Last step change, unix milliseconds.
    #[serde(default)]
    pub updated_at: i64,
}

impl ExecutionPlan {
    /// The step with this id.
    pub fn step(&self, id: &str) -> Option<&PlanStep> {
        self.steps.iter().find(|s| s.id == id)
    }
}

/// A goal with success criteria, as extracted from a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentGoal {
    /// What is to be achieved.
    pub description: String,
    /// How to tell it is achieved.
    #[serde(default)]
    pub success_criteria: Vec<String>,
    /// 0..1, as last checked.
    #[serde(default)]
    pub progress: f32,
    /// Whether it was judged achieved.
    #[serde(default)]
    pub achieved: bool,
    /// When it was extracted, unix milliseconds.
    #[serde(default)]
    pub created_at: i64,
    /// When it was judged achieved, unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_at: Option<i64>,
}

/// The model's judgement of how far a goal is achieved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoalCheck {
    /// Every success criterion is met.
    pub achieved: bool,
    /// 0..1.
    pub progress: f32,
    /// The criteria not met yet.
    #[serde(default)]
    pub remaining_criteria: Vec<String>,
}

/// Where a thread goal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadGoalStatus {
    /// Being pursued: turns count toward its usage and budget.
    Active,
    /// Set aside by a client.
    Paused,
    /// Cannot progress without outside help.
    Blocked,
    /// Stopped by a provider's usage limit.
    UsageLimited,
    /// Its token budget is used up: turns stop before their next model request.
    BudgetLimited,
    /// Achieved.
    Complete,
}

impl ThreadGoalStatus {
    /// Whether turns count toward the goal's usage and are held to its budget.
    pub fn is_pursued(self) -> bool {
        matches!(self, Self::Active | Self::BudgetLimited)
    }
}

/// What a thread is working toward, with an optional token budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadGoal {
    /// The thread.
    pub thread_id: ThreadId,
    /// UUIDv7 id; kept when the same objective is set again.
    pub goal_id: String,
    /// What the thread works toward.
    pub objective: String,
    /// Where the goal is.
    pub status: ThreadGoalStatus,
    /// Most tokens (input plus output) the goal's turns may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// Tokens used by turns while the goal was pursued.
    #[serde(default)]
    pub tokens_used: u64,
    /// Wall time of those turns, seconds.
    #[serde(default)]
    pub time_used_seconds: u64,
    /// When it was set, unix milliseconds.
    pub created_at: i64,
    /// Last change, unix milliseconds.
    pub updated_at: i64,
}

//! The thread actor's side of structured output, plans and the thread goal:
//! commands that change them, checked against the thread's current state,
//! and the goal's accounting when a turn ends.

use std::sync::Arc;

use gantry_types::{
    EventPayload, ExecutionPlan, PlanStepStatus, ThreadGoal, ThreadGoalStatus, TurnId, Usage,
    new_id,
};
use tokio::sync::oneshot;

use super::ThreadActor;
use crate::EngineError;
use crate::engine::Input;
use crate::turn::{StructuredSpec, TurnMode};

/// Commands about structured output, plans and the goal.
pub(crate) enum StructuredCommand {
    /// Start a structured-output turn on `text`; refused while a turn runs.
    Start {
        text: String,
        /// The request's W3C `traceparent`, kept with the turn.
        trace_parent: Option<String>,
        spec: Arc<StructuredSpec>,
        reply: oneshot::Sender<Result<TurnId, EngineError>>,
    },
    /// Set the goal (the same objective keeps its id and usage).
    SetGoal {
        objective: String,
        token_budget: Option<u64>,
        reply: oneshot::Sender<Result<ThreadGoal, EngineError>>,
    },
    /// Change the goal's status.
    SetGoalStatus {
        status: ThreadGoalStatus,
        reply: oneshot::Sender<Result<ThreadGoal, EngineError>>,
    },
    /// Remove the goal; replies with the removed one.
    ClearGoal {
        reply: oneshot::Sender<Option<ThreadGoal>>,
    },
    /// Store a plan (its id set).
    StorePlan {
        plan: ExecutionPlan,
        reply: oneshot::Sender<Result<(), EngineError>>,
    },
    /// Change a plan step's status; replies with the updated plan.
    UpdatePlanStep {
        plan_id: String,
        step_id: String,
        status: PlanStepStatus,
        reply: oneshot::Sender<Result<ExecutionPlan, EngineError>>,
    },
}

impl ThreadActor {
    pub(super) async fn handle_structured(&mut self, cmd: StructuredCommand) {
        match cmd {
            StructuredCommand::Start {
                text,
                trace_parent,
                spec,
                reply,
            } => {
                let input = Input {
                    trace_parent,
                    ..text.into()
                };
                let _ = reply.send(self.start_structured(input, spec).await);
            }
            StructuredCommand::SetGoal {
                objective,
                token_budget,
                reply,
            } => {
                let _ = reply.send(self.set_goal(objective, token_budget).await);
            }
            StructuredCommand::SetGoalStatus { status, reply } => {
                let result = match self.view.thread.goal.clone() {
                    Some(mut goal) => {
                        if goal.status != status {
                            goal.status = status;
                            goal.updated_at = self.shared.clock.now_ms();
                            self.emit(EventPayload::GoalUpdated { goal: goal.clone() })
                                .await;
                        }
                        Ok(goal)
                    }
                    None => Err(no_goal()),
                };
                let _ = reply.send(result);
            }
            StructuredCommand::ClearGoal { reply } => {
                let goal = self.view.thread.goal.clone();
                if goal.is_some() {
                    self.emit(EventPayload::GoalCleared).await;
                }
                let _ = reply.send(goal);
            }
            StructuredCommand::StorePlan { plan, reply } => {
                self.emit(EventPayload::PlanStored { plan }).await;
                let _ = reply.send(Ok(()));
            }
            StructuredCommand::UpdatePlanStep {
                plan_id,
                step_id,
                status,
                reply,
            } => {
                let _ = reply.send(self.update_plan_step(plan_id, step_id, status).await);
            }
        }
    }

    async fn start_structured(
        &mut self,
        input: Input,
        spec: Arc<StructuredSpec>,
    ) -> Result<TurnId, EngineError> {
        if self.view.thread.archived {
            return Err(EngineError::Archived(self.thread_id().clone()));
        }
        if let Some(running) = &self.turn {
            return Err(EngineError::Busy {
                thread: self.thread_id().clone(),
                turn: running.id.clone(),
            });
        }
        let id = TurnId::new();
        self.start_turn(id.clone(), input, TurnMode::Structured(spec))
            .await;
        Ok(id)
    }

    async fn set_goal(
        &mut self,
        objective: String,
        token_budget: Option<u64>,
    ) -> Result<ThreadGoal, EngineError> {
        if self.view.thread.archived {
            return Err(EngineError::Archived(self.thread_id().clone()));
        }
        let now = self.shared.clock.now_ms();
        let goal = match self.view.thread.goal.clone() {
            // Setting the same objective again changes its budget and makes
            // it active again (the way to continue after `budget_limited`),
            // keeping what it has used.
            Some(mut goal) if goal.objective == objective => {
                goal.token_budget = token_budget;
                goal.status = ThreadGoalStatus::Active;
                goal.updated_at = now;
                goal
            }
            _ => ThreadGoal {
                thread_id: self.thread_id().clone(),
                goal_id: new_id(),
                objective,
                status: ThreadGoalStatus::Active,
                token_budget,
                tokens_used: 0,
                time_used_seconds: 0,
                created_at: now,
                updated_at: now,
            },
        };
        self.emit(EventPayload::GoalUpdated { goal: goal.clone() })
            .await;
        Ok(goal)
    }

    async fn update_plan_step(
        &mut self,
        plan_id: String,
        step_id: String,
        status: PlanStepStatus,
    ) -> Result<ExecutionPlan, EngineError> {
        let Some(plan) = self.view.plans.iter().find(|p| p.id == plan_id) else {
            return Err(EngineError::NotFound {
                what: "plan",
                name: plan_id,
            });
        };
        let Some(step) = plan.step(&step_id) else {
            return Err(EngineError::NotFound {
                what: "plan step",
                name: step_id,
            });
        };
        if step.status != status {
            self.emit(EventPayload::PlanStepUpdated {
                plan_id: plan_id.clone(),
                step_id,
                status,
            })
            .await;
        }
        self.view
            .plans
            .iter()
            .find(|p| p.id == plan_id)
            .cloned()
            .ok_or(EngineError::NotFound {
                what: "plan",
                name: plan_id,
            })
    }

    /// As a turn ends: counts its tokens and time toward a pursued goal,
    /// and marks the goal `budget_limited` when the turn was stopped by the
    /// budget or used it up.
    pub(super) async fn account_goal(&mut self, turn_id: &TurnId, usage: &Usage) {
        let Some(mut goal) = self
            .view
            .thread
            .goal
            .clone()
            .filter(|g| g.status.is_pursued())
        else {
            return;
        };
        let stopped = self.turn.as_ref().is_some_and(|t| t.budget_limited);
        let now = self.shared.clock.now_ms();
        let seconds = self
            .view
            .turns
            .iter()
            .rev()
            .find(|t| &t.turn.id == turn_id)
            .map_or(0, |t| {
                now.saturating_sub(t.turn.started_at).max(0) as u64 / 1000
            });
        goal.tokens_used = goal.tokens_used.saturating_add(usage.total());
        goal.time_used_seconds = goal.time_used_seconds.saturating_add(seconds);
        let spent = goal.token_budget.is_some_and(|b| goal.tokens_used >= b);
        if stopped || spent {
            goal.status = ThreadGoalStatus::BudgetLimited;
        }
        if Some(&goal) != self.view.thread.goal.as_ref() {
            goal.updated_at = now;
            self.emit(EventPayload::GoalUpdated { goal }).await;
        }
    }
}

fn no_goal() -> EngineError {
    EngineError::InvalidInput("the thread has no goal; set one first".to_owned())
}

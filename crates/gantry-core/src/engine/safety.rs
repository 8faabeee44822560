//! The human in the loop: permission policies, approvals, questions to
//! the user, external tasks and lanes.

use gantry_types::UserInputAnswer;

use super::*;

/// The human in the loop: permission policies, approvals, questions to the
/// user, external tasks.
/// Get one from [`Engine::safety`].
#[derive(Clone, Copy)]
pub struct Safety<'e> {
    pub(crate) engine: &'e Engine,
}

impl Safety<'_> {
    /// Answers a pending approval. The first answer wins; a later one (or
    /// one after a timeout resolved it) gets an "already resolved" error.
    pub async fn resolve_approval(
        &self,
        thread: &ThreadId,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), EngineError> {
        let resolution = Resolution::Approval {
            decision,
            by: gantry_types::ResolvedBy::Client,
        };
        self.engine
            .ask(thread, |reply| Command::Answer {
                id: approval_id.to_owned(),
                resolution,
                reply,
            })
            .await?
    }

    /// Answers a pending user-input request (the model's
    /// `request_user_input`; pending ones are in the thread's view:
    /// [`projection::pending_user_inputs`](crate::projection::pending_user_inputs)).
    /// Each answer names a question by id and gives the labels of the
    /// options picked and/or the text typed; a question left out is
    /// skipped, and no answer at all tells the model the user declined.
    /// The first answer wins, whoever gives it (a client, the request's
    /// timeout, an interrupt). Errors: [`EngineError::NotFound`] when the
    /// thread asked no such request, [`EngineError::AlreadyResolved`] when
    /// it is no longer pending, [`EngineError::InvalidInput`] (naming the
    /// answer) when an answer does not fit its question; the request then
    /// still waits. Returns the answers as recorded: in question order,
    /// text trimmed, skipped questions left out.
    pub async fn answer_user_input(
        &self,
        thread: &ThreadId,
        request_id: &str,
        answers: Vec<UserInputAnswer>,
    ) -> Result<Vec<UserInputAnswer>, EngineError> {
        let resolution = Resolution::UserInput {
            answers: Some(answers.clone()),
            by: gantry_types::ResolvedBy::Client,
        };
        self.engine
            .ask(thread, |reply| Command::Answer {
                id: request_id.to_owned(),
                resolution,
                reply,
            })
            .await??;
        // Taken: the same check the actor made gives what it recorded.
        let recorded = self
            .engine
            .threads()
            .read(thread)
            .await
            .ok()
            .and_then(|view| {
                crate::projection::user_inputs(&view)
                    .find(|r| r.request_id == request_id)
                    .and_then(|r| {
                        crate::user_input::check_answers(r.questions, answers.clone()).ok()
                    })
            });
        Ok(recorded.unwrap_or(answers))
    }

    /// Completes an external task with the tool's result (`Ok`) or an error
    /// (`Err`); the model gets it as the call's result.
    pub async fn complete_external_task(
        &self,
        thread: &ThreadId,
        task_id: &str,
        result: Result<String, String>,
    ) -> Result<(), EngineError> {
        self.engine
            .ask(thread, |reply| Command::Answer {
                id: task_id.to_owned(),
                resolution: Resolution::Task(result),
                reply,
            })
            .await?
    }

    /// External tasks waiting for a client, with their time left.
    pub async fn pending_external_tasks(
        &self,
        thread: &ThreadId,
    ) -> Result<Vec<ExternalTaskInfo>, EngineError> {
        self.engine
            .ask(thread, |reply| Command::ListTasks { reply })
            .await
    }

    /// Replaces the thread's policy (persisted; applies from the next tool call,
    /// also inside a running turn). A sandbox looser than the engine's
    /// [`max_sandbox`](crate::EngineConfig::max_sandbox) is refused.
    pub async fn set_policy(
        &self,
        thread: &ThreadId,
        policy: ThreadPolicy,
    ) -> Result<(), EngineError> {
        self.engine.shared.config.check_sandbox(policy.sandbox)?;
        self.engine
            .ask(thread, |reply| Command::SetPolicy { policy, reply })
            .await?
    }

    /// Sets how a lane's tool calls are handled (persisted).
    pub async fn set_lane_handler(
        &self,
        thread: &ThreadId,
        handler: LaneHandler,
    ) -> Result<(), EngineError> {
        self.engine
            .ask(thread, |reply| Command::SetLaneHandler { handler, reply })
            .await?
    }

    /// What the thread's permission rules say about a tool call, and the
    /// rules that matched (the `CheckPermission` rpc).
    pub async fn check_permission(
        &self,
        thread: &ThreadId,
        tool: &str,
        args: &serde_json::Value,
    ) -> Result<(RuleDecision, Vec<String>), EngineError> {
        let view = self.engine.threads().read(thread).await?;
        let request = gantry_policy::ToolRequest {
            tool,
            args,
            workspace: std::path::Path::new(&view.thread.cwd),
        };
        Ok(gantry_policy::check_permission(
            &view.thread.policy.permissions,
            &request,
        ))
    }
}

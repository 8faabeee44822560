//! The human in the loop: permission policies, approvals, external tasks
//! and lanes.

use super::*;

/// The human in the loop: permission policies, approvals, external tasks.
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

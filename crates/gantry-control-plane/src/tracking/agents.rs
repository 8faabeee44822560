//! Agent and skill updates: plain upserts, not part of any thread's log.

use gantry_runner_protocol::messages::{AgentStatus, SkillMpStatus};

use super::Context;
use super::merge::{DELETED, READY, lifecycle};
use crate::requests::{self, Params};
use crate::store::{AgentRecord, SkillRecord, StoreError};

/// An agent became ready or was deleted. A new agent is recorded only as
/// the answer to our `CreateAgentRequest` for it.
pub(super) async fn agent_update(
    ctx: &Context<'_>,
    agent_id: &str,
    status: AgentStatus,
) -> Result<(), StoreError> {
    let incoming = match status {
        AgentStatus::Ready => READY,
        AgentStatus::Deleted => DELETED,
        AgentStatus::Unknown => return Ok(()),
    };
    match ctx.store.agent(agent_id).await? {
        Some(agent) if agent.runner_id != ctx.runner_id => {
            tracing::warn!(runner = ctx.runner_id, agent = %agent.id, "update for another runner's agent; ignored");
            Ok(())
        }
        Some(agent) => {
            let status = lifecycle(&agent.status, incoming);
            if status == agent.status {
                return Ok(());
            }
            let status = status.to_owned();
            ctx.store
                .put_agent(&AgentRecord {
                    status,
                    updated_at: ctx.now,
                    ..agent
                })
                .await
        }
        None => {
            let created = ctx.request.filter(|r| {
                r.kind == requests::CREATE_AGENT && r.agent_id.as_deref() == Some(agent_id)
            });
            let Some(request) = created.filter(|_| incoming == READY) else {
                tracing::debug!(runner = ctx.runner_id, agent = %agent_id, "update for an unknown agent; ignored");
                return Ok(());
            };
            let params = Params::parse(&request.params);
            ctx.store
                .put_agent(&AgentRecord {
                    id: agent_id.to_owned(),
                    runner_id: ctx.runner_id.to_owned(),
                    sdk: params.sdk.unwrap_or_default(),
                    model: params.model,
                    status: READY.to_owned(),
                    created_at: ctx.now,
                    updated_at: ctx.now,
                })
                .await
        }
    }
}

/// A skill package was installed into (or removed from) an agent of this runner.
pub(super) async fn skill_update(
    ctx: &Context<'_>,
    agent_id: &str,
    package_name: &str,
    status: SkillMpStatus,
) -> Result<(), StoreError> {
    let status = match status {
        SkillMpStatus::Installed => "installed",
        SkillMpStatus::Deleted => DELETED,
        SkillMpStatus::Unknown => return Ok(()),
    };
    let owned = ctx
        .store
        .agent(agent_id)
        .await?
        .is_some_and(|a| a.runner_id == ctx.runner_id);
    if !owned {
        tracing::debug!(runner = ctx.runner_id, agent = %agent_id, "skill update for an unknown agent; ignored");
        return Ok(());
    }
    ctx.store
        .put_skill(&SkillRecord {
            agent_id: agent_id.to_owned(),
            package_name: package_name.to_owned(),
            status: status.to_owned(),
            updated_at: ctx.now,
        })
        .await
}

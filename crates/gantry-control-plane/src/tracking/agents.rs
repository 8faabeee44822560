//! Agent and skill updates: plain upserts, not part of any thread's log.

use gantry_runner_protocol::messages::{AgentStatus, SkillMpStatus};

use super::Context;
use super::merge::{DELETED, READY, lifecycle};
use crate::requests::{self, Params};
use crate::store::{AgentRecord, SkillRecord, StoreError};

/// An agent became ready or was deleted. A new agent is recorded only as
/// the answer to our `CreateAgentRequest` for it.
pub(super) async fn agent_update(
    ctx: &mut Context<'_>,
    agent_id: &str,
    status: AgentStatus,
) -> Result<(), StoreError> {
    let incoming = match status {
        AgentStatus::Ready => READY,
        AgentStatus::Deleted => DELETED,
        AgentStatus::Unknown => return Ok(()),
    };
    match ctx.agent(agent_id).await? {
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
            let now = ctx.now;
            ctx.put_agent(AgentRecord {
                status,
                updated_at: now,
                ..agent
            });
            Ok(())
        }
        None => {
            let created = ctx.request.clone().filter(|r| {
                r.kind == requests::CREATE_AGENT && r.agent_id.as_deref() == Some(agent_id)
            });
            let Some(request) = created.filter(|_| incoming == READY) else {
                tracing::debug!(runner = ctx.runner_id, agent = %agent_id, "update for an unknown agent; ignored");
                return Ok(());
            };
            let params = Params::parse(&request.params);
            let (runner_id, now) = (ctx.runner_id.to_owned(), ctx.now);
            ctx.put_agent(AgentRecord {
                id: agent_id.to_owned(),
                runner_id,
                sdk: params.sdk.unwrap_or_default(),
                model: params.model,
                status: READY.to_owned(),
                created_at: now,
                updated_at: now,
            });
            Ok(())
        }
    }
}

/// A skill package was installed into (or removed from) an agent of this runner.
pub(super) async fn skill_update(
    ctx: &mut Context<'_>,
    agent_id: &str,
    package_name: &str,
    status: SkillMpStatus,
) -> Result<(), StoreError> {
    let status = match status {
        SkillMpStatus::Installed => "installed",
        SkillMpStatus::Deleted => DELETED,
        SkillMpStatus::Unknown => return Ok(()),
    };
    let runner_id = ctx.runner_id;
    let owned = ctx
        .agent(agent_id)
        .await?
        .is_some_and(|a| a.runner_id == runner_id);
    if !owned {
        tracing::debug!(runner = ctx.runner_id, agent = %agent_id, "skill update for an unknown agent; ignored");
        return Ok(());
    }
    let now = ctx.now;
    ctx.put_skill(SkillRecord {
        agent_id: agent_id.to_owned(),
        package_name: package_name.to_owned(),
        status: status.to_owned(),
        updated_at: now,
    });
    Ok(())
}

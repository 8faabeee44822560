//! Agents: created on a chosen or the least loaded runner, deleted, given
//! skill packages. A 0.7.0 runner has no agents: its agents are kept here
//! only (its threads bring what the agent needs).

use gantry_runner_protocol::ProtocolVersion;
use gantry_runner_protocol::messages::{AgentStatus, Payload, Request, SkillMpStatus};

use super::{NewAgent, NewSkill, Subject, unexpected};
use crate::ControlPlane;
use crate::choose::least_loaded;
use crate::error::{ApiError, require, require_if_given};
use crate::offers::includes;
use crate::requests::Params;
use crate::store::AgentRecord;
use crate::tracking::merge::DELETED;
use crate::views::{AgentView, SkillView};

/// The SDK of agents that name none.
const DEFAULT_SDK: &str = "gantry";

/// Longest agent id accepted from a caller.
const MAX_ID_LEN: usize = 128;

impl ControlPlane {
    /// Creates an agent on `new.runner_id`, or on the least loaded connected
    /// runner offering its SDK (and model).
    pub(crate) async fn create_agent(&self, new: NewAgent) -> Result<AgentView, ApiError> {
        let sdk = new.sdk.unwrap_or_else(|| DEFAULT_SDK.to_owned());
        require("sdk", &sdk)?;
        require_if_given("model", new.model.as_deref())?;
        let agent_id = match new.agent_id {
            Some(id) => {
                require("agent_id", &id)?;
                check_agent_id(&id)?;
                if self.inner.store.agent(&id).await?.is_some() {
                    return Err(ApiError::Conflict(format!("agent {id} already exists")));
                }
                id
            }
            None => uuid::Uuid::now_v7().to_string(),
        };
        let runner_id = self
            .runner_for(new.runner_id.as_deref(), &sdk, new.model.as_deref())
            .await?;
        if self.protocol_of(&runner_id) == ProtocolVersion::V0_7 {
            let now = crate::now_ms();
            let agent = AgentRecord {
                id: agent_id,
                runner_id,
                sdk,
                model: new.model,
                status: crate::tracking::merge::READY.to_owned(),
                created_at: now,
                updated_at: now,
            };
            self.inner.store.put_agent(&agent).await?;
            return Ok(AgentView::new(agent, Vec::new()));
        }
        let request = Request::CreateAgent {
            agent_id: agent_id.clone(),
            agent_sdk: sdk.clone(),
        };
        let subject = Subject {
            agent_id: Some(&agent_id),
            thread_id: None,
            params: Params {
                sdk: Some(sdk),
                model: new.model,
                ..Params::default()
            },
        };
        match self.ask(&runner_id, request, subject).await? {
            (
                _,
                Payload::Agent {
                    agent_id: id,
                    status,
                },
            ) if id == agent_id && status == AgentStatus::Ready => {}
            (_, reply) => return Err(unexpected("create_agent_request", &reply)),
        }
        let agent = self.inner.store.agent(&agent_id).await?.ok_or_else(|| {
            ApiError::Internal(format!(
                "agent {agent_id} was created on the runner but could not be recorded"
            ))
        })?;
        Ok(AgentView::new(agent, Vec::new()))
    }

    /// The runner a new agent goes on: the one asked for, if it is
    /// connected and offers what is asked, else the least loaded that does.
    async fn runner_for(
        &self,
        asked: Option<&str>,
        sdk: &str,
        model: Option<&str>,
    ) -> Result<String, ApiError> {
        let inner = &self.inner;
        let wanted = match model {
            Some(m) => format!("sdk {sdk:?} with model {m:?}"),
            None => format!("sdk {sdk:?}"),
        };
        let Some(id) = asked else {
            let loads = inner.store.runner_loads().await?;
            let mut connected = inner.registry.connected();
            if inner.cluster.is_some() {
                // Leases on NATS may name runners of another store (replicas
                // of another deployment on the same server): only ours.
                let ours: std::collections::HashSet<String> = inner
                    .store
                    .runners()
                    .await?
                    .into_iter()
                    .map(|r| r.id)
                    .collect();
                connected.retain(|(id, _)| ours.contains(id));
            }
            if let Some(id) = least_loaded(&connected, &loads, sdk, model) {
                return Ok(id);
            }
            // Offered by a runner connected but missing its heartbeats, or
            // offline: try again later, and the 503 says which. Offered by
            // none: the request is wrong.
            if let Some((id, _)) = inner
                .registry
                .unhealthy()
                .into_iter()
                .find(|(_, offers)| includes(offers, sdk, model))
            {
                return Err(ApiError::Unavailable(format!(
                    "no healthy runner offers {wanted}: {}",
                    super::unhealthy(&id)
                )));
            }
            let all = inner.registry.all_offers();
            if all.iter().any(|offers| includes(offers, sdk, model)) {
                return Err(ApiError::Unavailable(format!(
                    "no connected runner offers {wanted}: the runners that do are offline"
                )));
            }
            let field = if all.iter().any(|offers| includes(offers, sdk, None)) {
                "model"
            } else {
                "sdk"
            };
            return Err(ApiError::BadRequest(format!(
                "{field}: no runner offers {wanted}"
            )));
        };
        require("runner_id", id)?;
        if !inner.store.runners().await?.iter().any(|r| r.id == id) {
            return Err(ApiError::NotFound(format!("runner {id} not found")));
        }
        self.available(id)?;
        let offers = inner.registry.offers(id);
        if !includes(&offers, sdk, model) {
            let field = if includes(&offers, sdk, None) {
                "model"
            } else {
                "sdk"
            };
            return Err(ApiError::BadRequest(format!(
                "{field}: runner {id} does not offer {wanted}"
            )));
        }
        Ok(id.to_owned())
    }

    /// Says an agent changed (`GET /v1/events` tells the dashboard).
    pub(crate) fn agents_changed(&self) {
        self.inner.agents_changed.send_replace(());
    }

    /// Every agent that is not deleted.
    pub(crate) async fn agents(&self) -> Result<Vec<AgentView>, ApiError> {
        let mut views = Vec::new();
        for agent in self.inner.store.agents().await? {
            if agent.status != DELETED {
                let skills = self.inner.store.skills(&agent.id).await?;
                views.push(AgentView::new(agent, skills));
            }
        }
        Ok(views)
    }

    /// One agent, deleted or not.
    pub(crate) async fn agent(&self, id: &str) -> Result<AgentView, ApiError> {
        let agent = self.agent_record(id).await?;
        let skills = self.inner.store.skills(id).await?;
        Ok(AgentView::new(agent, skills))
    }

    /// The stored agent, else [`ApiError::NotFound`].
    pub(crate) async fn agent_record(&self, id: &str) -> Result<AgentRecord, ApiError> {
        self.inner
            .store
            .agent(id)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("agent {id} not found")))
    }

    /// The stored agent, which must not be deleted.
    pub(crate) async fn live_agent(&self, id: &str) -> Result<AgentRecord, ApiError> {
        let agent = self.agent_record(id).await?;
        if agent.status == DELETED {
            return Err(ApiError::Conflict(format!("agent {id} is deleted")));
        }
        Ok(agent)
    }

    /// Deletes an agent on its runner; deleting it again changes nothing.
    pub(crate) async fn delete_agent(&self, id: &str) -> Result<AgentView, ApiError> {
        let agent = self.agent_record(id).await?;
        if agent.status != DELETED && self.protocol_of(&agent.runner_id) == ProtocolVersion::V0_7 {
            let agent = AgentRecord {
                status: DELETED.to_owned(),
                updated_at: crate::now_ms(),
                ..agent
            };
            self.inner.store.put_agent(&agent).await?;
        } else if agent.status != DELETED {
            let request = Request::DeleteAgent {
                agent_id: id.to_owned(),
            };
            let subject = Subject {
                agent_id: Some(id),
                ..Subject::default()
            };
            match self.ask(&agent.runner_id, request, subject).await? {
                (_, Payload::Agent { agent_id, status })
                    if agent_id == id && status == AgentStatus::Deleted => {}
                (_, reply) => return Err(unexpected("delete_agent_request", &reply)),
            }
        }
        self.agent(id).await
    }

    /// Installs a skill package into an agent.
    pub(crate) async fn install_skill(
        &self,
        agent_id: &str,
        new: NewSkill,
    ) -> Result<SkillView, ApiError> {
        require("package_name", &new.package_name)?;
        let agent = self.live_agent(agent_id).await?;
        if self.protocol_of(&agent.runner_id) == ProtocolVersion::V0_7 {
            return Err(ApiError::Conflict(format!(
                "agent {agent_id} runs on a runner of protocol 0.7, which installs no skill \
                 packages into agents: give a thread its skills as git packages \
                 (git_skill_packages of POST /v1/agents/{agent_id}/threads)"
            )));
        }
        let request = Request::InstallSkills {
            agent_id: agent_id.to_owned(),
            package_name: new.package_name.clone(),
        };
        let subject = Subject {
            agent_id: Some(agent_id),
            ..Subject::default()
        };
        match self.ask(&agent.runner_id, request, subject).await? {
            (
                _,
                Payload::SkillPackage {
                    package_name,
                    status,
                    ..
                },
            ) if package_name == new.package_name && status == SkillMpStatus::Installed => {}
            (_, reply) => return Err(unexpected("install_skills_mp_request", &reply)),
        }
        self.inner
            .store
            .skills(agent_id)
            .await?
            .into_iter()
            .find(|s| s.package_name == new.package_name)
            .map(SkillView::from)
            .ok_or_else(|| {
                ApiError::Internal(format!(
                    "skill {} was installed but could not be recorded",
                    new.package_name
                ))
            })
    }
}

/// An agent id a runner can take (the `gantry` runner's rule, which keeps
/// ids usable as directory names and in URLs): 1 to 128 letters, digits,
/// `.`, `_` or `-`, and not `.` or `..`.
fn check_agent_id(id: &str) -> Result<(), ApiError> {
    let ok = id.len() <= MAX_ID_LEN
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::BadRequest(format!(
            "agent_id: {id:?} is invalid: use 1 to {MAX_ID_LEN} letters, digits, `.`, `_` or `-`"
        )))
    }
}

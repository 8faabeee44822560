//! Agents through the engine API: named configurations (persisted) that
//! threads run under, each with its own skills dir that skill packages are
//! installed into (the runner protocol's `InstallSkillsMpRequest`).

use std::path::PathBuf;

use gantry_tools::skills::{self, SkillPackageStatus, SkillPackageUpdate};
use gantry_types::{Agent, AgentId, GANTRY_SDK};

use crate::engine_events::EngineEventKind;
use crate::{Engine, EngineConfig, EngineError};

/// Longest accepted agent id.
const MAX_AGENT_ID_LEN: usize = 128;

/// Parameters of a new or changed agent.
#[derive(Debug, Clone, Default)]
pub struct AgentSpec {
    /// Its id; a fresh UUIDv7 when `None`. Letters, digits, `.`, `_`, `-`.
    pub id: Option<AgentId>,
    /// Human-readable name; the id when `None`.
    pub name: Option<String>,
    /// Agent SDK; `gantry` when `None`. Gantry runs only its own.
    pub sdk: Option<String>,
    /// Default model of its threads.
    pub model: Option<String>,
    /// Default reasoning effort of its threads.
    pub reasoning: Option<String>,
    /// Default instructions of its threads.
    pub instructions: Option<String>,
}

/// Agents: save, list, delete, and their skill packages.
/// Get one from [`Engine::agents`].
#[derive(Clone, Copy)]
pub struct Agents<'e> {
    pub(crate) engine: &'e Engine,
}

impl Agents<'_> {
    /// Creates an agent, or replaces the one with the same id (its
    /// installed skills stay). Publishes [`EngineEventKind::AgentSaved`].
    pub async fn save(self, spec: AgentSpec) -> Result<Agent, EngineError> {
        let id = match spec.id {
            Some(id) => {
                check_agent_id(&id)?;
                id
            }
            None => AgentId::new(),
        };
        let sdk = spec.sdk.unwrap_or_else(|| GANTRY_SDK.to_owned());
        if sdk != GANTRY_SDK {
            return Err(EngineError::InvalidInput(format!(
                "unknown agent sdk `{sdk}`: this runner offers `{GANTRY_SDK}`"
            )));
        }
        let now = self.engine.shared.clock.now_ms();
        let created_at = match self.engine.shared.store.agent(&id).await? {
            Some(old) => old.created_at,
            None => now,
        };
        let agent = Agent {
            name: spec
                .name
                .filter(|n| !n.trim().is_empty())
                .unwrap_or_else(|| id.to_string()),
            id,
            sdk,
            model: spec.model.filter(|m| !m.trim().is_empty()),
            reasoning: spec.reasoning.filter(|r| !r.trim().is_empty()),
            instructions: spec.instructions.filter(|i| !i.trim().is_empty()),
            created_at,
            updated_at: now,
        };
        self.engine.shared.store.put_agent(&agent).await?;
        self.engine.publish(
            None,
            EngineEventKind::AgentSaved {
                agent: agent.clone(),
            },
        );
        Ok(agent)
    }

    /// The agent with `id`.
    pub async fn get(self, id: &AgentId) -> Result<Agent, EngineError> {
        self.engine
            .shared
            .store
            .agent(id)
            .await?
            .ok_or_else(|| EngineError::NotFound {
                what: "agent",
                name: id.to_string(),
            })
    }

    /// Every agent, by id.
    pub async fn list(self) -> Result<Vec<Agent>, EngineError> {
        Ok(self.engine.shared.store.agents().await?)
    }

    /// Deletes an agent and its installed skills; false if it was unknown.
    /// Its threads stay (they lose its skills when next loaded).
    pub async fn delete(self, id: &AgentId) -> Result<bool, EngineError> {
        if !self.engine.shared.store.delete_agent(id).await? {
            return Ok(false);
        }
        if let Some(dir) = self.engine.agent_dir(id) {
            match tokio::fs::remove_dir_all(&dir).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "cannot remove an agent's files")
                }
            }
        }
        self.engine.publish(
            None,
            EngineEventKind::AgentDeleted {
                agent_id: id.clone(),
            },
        );
        Ok(true)
    }

    /// Where the agent's installed skills live (`<data_dir>/agents/<id>/skills`),
    /// if the engine has a data dir.
    pub fn skills_dir(self, id: &AgentId) -> Option<PathBuf> {
        agent_skills_dir(&self.engine.shared.config, id)
    }

    /// Installs a skill package (a local path, a `.tar.gz`/`.zip` URL or a
    /// git URL) into the agent's skills dir; returns the skills it brought.
    /// Live threads of the agent get them at once. Publishes
    /// [`EngineEventKind::SkillPackage`] with status installed.
    pub async fn install_skill_package(
        &self,
        agent: &AgentId,
        package: &str,
    ) -> Result<SkillPackageUpdate, EngineError> {
        self.engine.agents().get(agent).await?;
        let dir = self.engine.require_skills_dir(agent)?;
        let names = skills::install(package, &dir)
            .await
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        self.engine.refresh_agent_skills(agent).await;
        let update = SkillPackageUpdate {
            agent_id: agent.to_string(),
            package_name: package.to_owned(),
            status: SkillPackageStatus::Installed,
            skills: names,
        };
        self.engine
            .publish(None, EngineEventKind::SkillPackage(update.clone()));
        Ok(update)
    }

    /// Deletes an installed skill from the agent's skills dir. Publishes
    /// [`EngineEventKind::SkillPackage`] with status deleted.
    pub async fn delete_skill(
        &self,
        agent: &AgentId,
        skill: &str,
    ) -> Result<SkillPackageUpdate, EngineError> {
        self.engine.agents().get(agent).await?;
        let dir = self.engine.require_skills_dir(agent)?;
        skills::delete(skill, &dir).await.map_err(|e| match e {
            skills::SkillError::NotInstalled { .. } => EngineError::NotFound {
                what: "skill",
                name: skill.to_owned(),
            },
            e => EngineError::InvalidInput(e.to_string()),
        })?;
        self.engine.refresh_agent_skills(agent).await;
        let update = SkillPackageUpdate {
            agent_id: agent.to_string(),
            package_name: skill.to_owned(),
            status: SkillPackageStatus::Deleted,
            skills: vec![skill.to_owned()],
        };
        self.engine
            .publish(None, EngineEventKind::SkillPackage(update.clone()));
        Ok(update)
    }
}

impl Engine {
    fn agent_dir(&self, id: &AgentId) -> Option<PathBuf> {
        agent_dir(&self.shared.config, id)
    }

    fn require_skills_dir(&self, id: &AgentId) -> Result<PathBuf, EngineError> {
        self.agents().skills_dir(id).ok_or_else(|| {
            EngineError::InvalidInput(
                "this engine has no data dir, so it cannot install skills; start it with one"
                    .to_owned(),
            )
        })
    }
}

/// `<data_dir>/agents/<id>`. Ids are checked at creation to be one plain
/// path component.
fn agent_dir(config: &EngineConfig, id: &AgentId) -> Option<PathBuf> {
    let data_dir = config.data_dir.as_ref()?;
    Some(data_dir.join("agents").join(id.as_str()))
}

/// Where an agent's installed skills live, if the engine has a data dir.
pub(crate) fn agent_skills_dir(config: &EngineConfig, id: &AgentId) -> Option<PathBuf> {
    agent_dir(config, id).map(|d| d.join("skills"))
}

/// An agent id must be one safe path component: it names the agent's dir.
fn check_agent_id(id: &AgentId) -> Result<(), EngineError> {
    let s = id.as_str();
    let ok = !s.is_empty()
        && s.len() <= MAX_AGENT_ID_LEN
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(EngineError::InvalidInput(format!(
            "agent id {s:?} is invalid: use 1 to {MAX_AGENT_ID_LEN} letters, digits, `.`, `_` or `-`"
        )))
    }
}

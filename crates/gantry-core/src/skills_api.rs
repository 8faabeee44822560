//! A thread's skills through the engine API. Skills are discovered from the
//! workspace (`.gantry/skills`, `.claude/skills`) and the user's config dir
//! when the thread goes live; the model sees the invocable ones and calls the
//! `skill` tool; clients can load, unload and add inline skills. A
//! workspace's own skills grant their `allowed-tools` only in a workspace
//! the operator trusts ([`crate::EngineConfig::trusted_workspaces`]).

use std::path::PathBuf;

use gantry_tools::skills::{
    SharedSkillSet, Skill, SkillListing, SkillSource, default_config_home, discover, discover_dir,
};
use gantry_types::{AgentId, ThreadId};

use crate::actor::{Command, discover_installed};
use crate::turn::read_skills;
use crate::{Engine, EngineError};

/// Skills: discover, list, load into a thread, unload.
/// Get one from [`Engine::skills`].
#[derive(Clone, Copy)]
pub struct Skills<'e> {
    pub(crate) engine: &'e Engine,
}

impl Skills<'_> {
    /// The skills a thread in `workspace` would find (workspace, then the
    /// user's config dir), without a thread. Broken skills are skipped and
    /// logged, as threads skip them.
    pub async fn discover(self, workspace: PathBuf) -> Result<Vec<Skill>, EngineError> {
        // Discovery reads the filesystem: off the async threads.
        let (skills, errors) = tokio::task::spawn_blocking(move || {
            discover(&workspace, default_config_home().as_deref())
        })
        .await
        .map_err(|e| EngineError::Unavailable(format!("skill discovery failed: {e}")))?;
        for e in errors {
            tracing::warn!(error = %e, "skipping a skill");
        }
        Ok(skills)
    }

    /// The thread's skills, with whether each is loaded and model-invocable.
    pub async fn list(self, thread: &ThreadId) -> Result<Vec<SkillListing>, EngineError> {
        let skills = self.engine.skill_set(thread).await?;
        Ok(read_skills(&skills).list())
    }

    /// Loads a skill (also one the model may not invoke itself): its
    /// instructions enter the context of the next requests, its
    /// `allowed-tools` apply (unless it is a workspace skill and the
    /// workspace is not trusted).
    pub async fn load(self, thread: &ThreadId, name: &str) -> Result<(), EngineError> {
        let skills = self.engine.skill_set(thread).await?;
        let mut set = skills.write().unwrap_or_else(|p| p.into_inner());
        set.load(name)
            .map(|_| ())
            .map_err(|e| EngineError::InvalidInput(e.to_string()))
    }

    /// Adds and loads a skill from `SKILL.md` text; returns its name.
    pub async fn load_inline(&self, thread: &ThreadId, text: &str) -> Result<String, EngineError> {
        let skills = self.engine.skill_set(thread).await?;
        let mut set = skills.write().unwrap_or_else(|p| p.into_inner());
        set.load_inline(text)
            .map(|s| s.name.clone())
            .map_err(|e| EngineError::InvalidInput(e.to_string()))
    }

    /// The skills in the folders of `dir` (each with a `SKILL.md`), and why
    /// the others that look like skills do not load.
    pub async fn read_dir(
        self,
        dir: PathBuf,
        source: SkillSource,
    ) -> Result<(Vec<Skill>, Vec<String>), EngineError> {
        let (skills, errors) = tokio::task::spawn_blocking(move || discover_dir(&dir, source))
            .await
            .map_err(|e| EngineError::Unavailable(format!("reading skills failed: {e}")))?;
        Ok((skills, errors.iter().map(ToString::to_string).collect()))
    }

    /// Installs a skill package (a local folder, a `.tar.gz`/`.zip` URL or
    /// a git URL) into the skills folder `dir` (a workspace's
    /// `.gantry/skills`, or [`Skills::user_dir`]); the skills it brought.
    pub async fn install(
        self,
        package: &str,
        dir: &std::path::Path,
    ) -> Result<Vec<String>, EngineError> {
        gantry_tools::skills::install(package, dir)
            .await
            .map_err(|e| EngineError::InvalidInput(e.to_string()))
    }

    /// The user's skills folder, which every thread discovers
    /// (`$XDG_CONFIG_HOME/gantry/skills`); `None` without a home.
    pub fn user_dir(self) -> Option<PathBuf> {
        default_config_home().map(|home| home.join("gantry/skills"))
    }

    /// Unloads a skill; false if it was not loaded.
    pub async fn unload(self, thread: &ThreadId, name: &str) -> Result<bool, EngineError> {
        let skills = self.engine.skill_set(thread).await?;
        let mut set = skills.write().unwrap_or_else(|p| p.into_inner());
        set.unload(name)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))
    }
}

impl Engine {
    async fn skill_set(&self, thread: &ThreadId) -> Result<SharedSkillSet, EngineError> {
        self.ask(thread, |reply| Command::Skills { reply }).await
    }
}

impl Engine {
    /// Brings the live threads of `agent` up to date with its skills dir.
    pub(crate) async fn refresh_agent_skills(&self, agent: &AgentId) {
        let Some(dir) = self.agents().skills_dir(agent) else {
            return;
        };
        let installed = discover_installed(&dir);
        for thread in self.live_threads().await {
            let Ok(view) = self.threads().read(&thread).await else {
                continue;
            };
            if view.thread.agent_id.as_ref() != Some(agent) {
                continue;
            }
            if let Ok(skills) = self.skill_set(&thread).await {
                skills
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .sync_source(SkillSource::Installed, installed.clone());
            }
        }
    }
}

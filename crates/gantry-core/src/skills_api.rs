//! A thread's skills through the engine API. Skills are discovered from the
//! workspace (`.gantry/skills`, `.claude/skills`) and the user's config dir
//! when the thread goes live; the model sees the invocable ones and calls the
//! `skill` tool; clients can load, unload and add inline skills.

use gantry_tools::skills::{SharedSkillSet, SkillListing};
use gantry_types::ThreadId;

use crate::actor::Command;
use crate::turn::read_skills;
use crate::{Engine, EngineError};

impl Engine {
    /// The thread's skills, with whether each is loaded and model-invocable.
    pub async fn list_skills(&self, thread: &ThreadId) -> Result<Vec<SkillListing>, EngineError> {
        let skills = self.skills(thread).await?;
        Ok(read_skills(&skills).list())
    }

    /// Loads a skill (also one the model may not invoke itself): its
    /// instructions enter the context of the next requests, its
    /// `allowed-tools` apply.
    pub async fn load_skill(&self, thread: &ThreadId, name: &str) -> Result<(), EngineError> {
        let skills = self.skills(thread).await?;
        let mut set = skills.write().unwrap_or_else(|p| p.into_inner());
        set.load(name)
            .map(|_| ())
            .map_err(|e| EngineError::InvalidInput(e.to_string()))
    }

    /// Adds and loads a skill from `SKILL.md` text; returns its name.
    pub async fn load_inline_skill(
        &self,
        thread: &ThreadId,
        text: &str,
    ) -> Result<String, EngineError> {
        let skills = self.skills(thread).await?;
        let mut set = skills.write().unwrap_or_else(|p| p.into_inner());
        set.load_inline(text)
            .map(|s| s.name.clone())
            .map_err(|e| EngineError::InvalidInput(e.to_string()))
    }

    /// Unloads a skill; false if it was not loaded.
    pub async fn unload_skill(&self, thread: &ThreadId, name: &str) -> Result<bool, EngineError> {
        let skills = self.skills(thread).await?;
        let mut set = skills.write().unwrap_or_else(|p| p.into_inner());
        set.unload(name)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))
    }

    async fn skills(&self, thread: &ThreadId) -> Result<SharedSkillSet, EngineError> {
        self.ask(thread, |reply| Command::Skills { reply }).await
    }
}

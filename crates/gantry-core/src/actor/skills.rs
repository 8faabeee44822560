//! The skills a thread starts with, read from disk.

use super::*;

/// The skills of a workspace, the user's config dir and the thread's agent
/// (installed packages, lowest precedence); broken ones are logged, not fatal.
pub(super) fn discover_skills(cwd: &str, agent_skills: Option<&std::path::Path>) -> SharedSkillSet {
    let config_home = gantry_tools::skills::default_config_home();
    let (skills, errors) =
        gantry_tools::skills::discover(std::path::Path::new(cwd), config_home.as_deref());
    for e in errors {
        tracing::warn!(error = %e, "skipping a skill");
    }
    let set = SkillSet::shared(skills);
    if let Some(dir) = agent_skills {
        let installed = discover_installed(dir);
        set.write()
            .unwrap_or_else(|p| p.into_inner())
            .sync_source(SkillSource::Installed, installed);
    }
    set
}

/// The skills installed in an agent's skills dir; broken ones are logged.
pub(crate) fn discover_installed(dir: &std::path::Path) -> Vec<gantry_tools::skills::Skill> {
    let (skills, errors) = gantry_tools::skills::discover_dir(dir, SkillSource::Installed);
    for e in errors {
        tracing::warn!(error = %e, "skipping an installed skill");
    }
    skills
}

impl ThreadActor {
    /// After the thread moved to `cwd`: its workspace skills are the new
    /// workspace's (the user's and its agent's stay).
    pub(super) fn follow_workspace(&self, cwd: &str) {
        let mut set = self.skills.write().unwrap_or_else(|p| p.into_inner());
        for (dir, source) in gantry_tools::skills::skill_dirs(std::path::Path::new(cwd), None) {
            let (skills, errors) = gantry_tools::skills::discover_dir(&dir, source);
            for e in errors {
                tracing::warn!(error = %e, "skipping a skill");
            }
            set.sync_source(source, skills);
        }
    }
}

//! The skills a thread starts with, read from disk.

use super::*;

/// The skills of a workspace, the user's config dir and the thread's agent
/// (installed packages, lowest precedence); broken ones are logged, not fatal.
/// `config` says whether the operator trusts the workspace, i.e. whether
/// its own skills' `allowed-tools` apply. Reads the filesystem.
pub(super) fn discover_skills(
    cwd: &str,
    agent_skills: Option<&std::path::Path>,
    config: &crate::EngineConfig,
) -> SharedSkillSet {
    let config_home = gantry_tools::skills::default_config_home();
    let (skills, errors) =
        gantry_tools::skills::discover(std::path::Path::new(cwd), config_home.as_deref());
    for e in errors {
        tracing::warn!(error = %e, "skipping a skill");
    }
    let set = SkillSet::shared(skills);
    {
        let mut guard = set.write().unwrap_or_else(|p| p.into_inner());
        guard.set_workspace(
            cwd.into(),
            config.trusts_workspace(std::path::Path::new(cwd)),
        );
        if let Some(dir) = agent_skills {
            guard.sync_source(SkillSource::Installed, discover_installed(dir));
        }
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
    /// workspace's (the user's and its agent's stay), granting rights only
    /// if the operator trusts it.
    pub(super) fn follow_workspace(&self, cwd: &str) {
        let trusted = self
            .shared
            .config
            .trusts_workspace(std::path::Path::new(cwd));
        let mut set = self.skills.write().unwrap_or_else(|p| p.into_inner());
        set.set_workspace(cwd.into(), trusted);
        for (dir, source) in gantry_tools::skills::skill_dirs(std::path::Path::new(cwd), None) {
            let (skills, errors) = gantry_tools::skills::discover_dir(&dir, source);
            for e in errors {
                tracing::warn!(error = %e, "skipping a skill");
            }
            set.sync_source(source, skills);
        }
    }
}

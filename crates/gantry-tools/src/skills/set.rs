//! A thread's skills: what exists, what the model may invoke, what is loaded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use super::{Skill, SkillError, SkillSource};

/// A [`SkillSet`] shared between a thread and its [`super::SkillTool`]. The
/// lock is never held across an await.
pub type SharedSkillSet = Arc<RwLock<SkillSet>>;

pub use gantry_types::skill::SkillListing;

/// The skills of one thread. Loading a skill puts its instructions into
/// the thread's context and its `allowed-tools` into effect; the engine
/// reads [`SkillSet::loaded`] and [`SkillSet::active_allowed_tools`] for
/// that.
///
/// A skill found in the workspace ([`Skill::from_workspace`]) adds
/// instructions but no rights: its `allowed-tools` apply only once
/// [`SkillSet::set_workspace`] says the operator trusts the workspace.
/// [`SkillSet::active_allowed_tools`] is the one place that rule is kept.
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    skills: BTreeMap<String, Skill>,
    loaded: BTreeSet<String>,
    /// Loaded on request (not invoked by the model): their instructions go
    /// to the model with every request, as the model never read them.
    requested: BTreeSet<String>,
    /// Skills an inline skill of the same name replaced; they come back
    /// when the inline one is unloaded.
    shadowed: BTreeMap<String, Skill>,
    /// The thread's workspace (canonical); `None` until the engine sets it.
    workspace: Option<PathBuf>,
    /// Whether the operator trusts it, so its skills' `allowed-tools` apply.
    /// False by default: a set that was never told grants no workspace rights.
    workspace_trusted: bool,
}

impl SkillSet {
    /// A set of `skills`, none loaded. On a name clash the first one wins,
    /// so pass them in precedence order (as [`super::discover`] returns them).
    pub fn new(skills: impl IntoIterator<Item = Skill>) -> Self {
        let mut set = SkillSet::default();
        for s in skills {
            set.skills.entry(s.name.clone()).or_insert(s);
        }
        set
    }

    /// A [`SharedSkillSet`] of `skills`.
    pub fn shared(skills: impl IntoIterator<Item = Skill>) -> SharedSkillSet {
        Arc::new(RwLock::new(SkillSet::new(skills)))
    }

    /// Sets the thread's workspace (canonical) and whether the operator
    /// trusts it; from then on the `allowed-tools` of skills in it apply
    /// only if `trusted`. Called when the thread goes live and when it
    /// moves to another workspace.
    pub fn set_workspace(&mut self, workspace: PathBuf, trusted: bool) {
        self.workspace = Some(workspace);
        self.workspace_trusted = trusted;
    }

    /// The thread's workspace, if set.
    pub fn workspace(&self) -> Option<&Path> {
        self.workspace.as_deref()
    }

    /// Whether `skill`'s `allowed-tools` become allow rules in this thread:
    /// always for a skill from outside the workspace (the user's, an
    /// installed package, an inline one a client gave); for one in the
    /// workspace only when the operator trusts it.
    pub fn grants(&self, skill: &Skill) -> bool {
        self.workspace_trusted || !skill.from_workspace(self.workspace.as_deref())
    }

    /// Adds a skill, replacing one of the same name (which stays loaded if
    /// it was). Returns the replaced skill.
    pub fn insert(&mut self, skill: Skill) -> Option<Skill> {
        self.skills.insert(skill.name.clone(), skill)
    }

    /// Makes the skills from `source` exactly `skills` (e.g. after a
    /// package install into an agent's skills dir): new ones are added
    /// unless a skill of higher precedence has the name, gone ones are
    /// removed (and unloaded). Returns the names added and removed.
    pub fn sync_source(
        &mut self,
        source: SkillSource,
        skills: Vec<Skill>,
    ) -> (Vec<String>, Vec<String>) {
        let fresh: BTreeSet<String> = skills.iter().map(|s| s.name.clone()).collect();
        let removed: Vec<String> = self
            .skills
            .values()
            .filter(|s| s.source == source && !fresh.contains(&s.name))
            .map(|s| s.name.clone())
            .collect();
        for name in &removed {
            self.skills.remove(name);
            self.loaded.remove(name);
            self.requested.remove(name);
        }
        let mut added = Vec::new();
        for skill in skills {
            let shadowed = self
                .skills
                .get(&skill.name)
                .is_some_and(|old| old.source < source);
            if !shadowed {
                if !self.skills.contains_key(&skill.name) {
                    added.push(skill.name.clone());
                }
                self.skills.insert(skill.name.clone(), skill);
            }
        }
        (added, removed)
    }

    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// Every skill name, sorted.
    pub fn names(&self) -> Vec<String> {
        self.skills.keys().cloned().collect()
    }

    /// The skills the model may invoke (no `disable-model-invocation`), by name.
    pub fn available(&self) -> Vec<&Skill> {
        self.skills
            .values()
            .filter(|s| s.model_invocable())
            .collect()
    }

    /// Names of [`SkillSet::available`].
    pub fn available_names(&self) -> Vec<String> {
        self.available().iter().map(|s| s.name.clone()).collect()
    }

    /// Loads `name` on request (a user or client; `disable-model-invocation`
    /// skills included). Loading a loaded skill is a no-op.
    pub fn load(&mut self, name: &str) -> Result<&Skill, SkillError> {
        if !self.skills.contains_key(name) {
            return Err(self.unknown(name));
        }
        self.mark_loaded(name);
        self.requested.insert(name.to_string());
        self.skills.get(name).ok_or_else(|| self.unknown(name))
    }

    /// Marks `name` loaded because the model invoked it (its instructions
    /// came back as the `skill` tool's result, so they are in the history).
    pub fn invoke(&mut self, name: &str) -> Result<&Skill, SkillError> {
        if !self.skills.contains_key(name) {
            return Err(self.unknown(name));
        }
        self.mark_loaded(name);
        self.skills.get(name).ok_or_else(|| self.unknown(name))
    }

    /// Marks `name` loaded; the first time, says so in the log when its
    /// `allowed-tools` are ignored, so an operator sees why a call it
    /// seems to allow is refused or asks for approval.
    fn mark_loaded(&mut self, name: &str) {
        if !self.loaded.insert(name.to_string()) {
            return;
        }
        if let Some(skill) = self.skills.get(name)
            && !skill.allowed_tools.is_empty()
            && !self.grants(skill)
        {
            tracing::warn!(
                workspace = %self.workspace.as_deref().unwrap_or(Path::new("")).display(),
                "{}",
                skill.ignored_note()
            );
        }
    }

    /// Parses `text` as a `SKILL.md`, adds it as an inline skill and loads
    /// it. It replaces a skill of the same name until it is unloaded.
    pub fn load_inline(&mut self, text: &str) -> Result<&Skill, SkillError> {
        let skill = Skill::parse(text, None)?.with_source(SkillSource::Inline);
        let name = skill.name.clone();
        if let Some(old) = self.skills.insert(name.clone(), skill)
            && old.source != SkillSource::Inline
        {
            self.shadowed.insert(name.clone(), old);
        }
        self.load(&name)
    }

    /// Unloads `name`. Returns whether it was loaded. An inline skill is
    /// dropped (there is nothing to reload it from) and the skill it
    /// replaced, if any, is back, unloaded.
    pub fn unload(&mut self, name: &str) -> Result<bool, SkillError> {
        let Some(skill) = self.skills.get(name) else {
            return Err(self.unknown(name));
        };
        let was_loaded = self.loaded.remove(name);
        self.requested.remove(name);
        if skill.source == SkillSource::Inline {
            self.skills.remove(name);
            if let Some(old) = self.shadowed.remove(name) {
                self.skills.insert(name.to_string(), old);
            }
        }
        Ok(was_loaded)
    }

    /// Whether `name` is loaded.
    pub fn is_loaded(&self, name: &str) -> bool {
        self.loaded.contains(name)
    }

    /// The skills loaded on request (not by the model), by name: the
    /// ones whose instructions the model must be given.
    pub fn requested(&self) -> Vec<&Skill> {
        self.requested
            .iter()
            .filter_map(|n| self.skills.get(n))
            .collect()
    }

    /// The loaded skills, by name.
    pub fn loaded(&self) -> Vec<&Skill> {
        self.loaded
            .iter()
            .filter_map(|n| self.skills.get(n))
            .collect()
    }

    /// Every skill with its loaded flag, by name.
    pub fn list(&self) -> Vec<SkillListing> {
        self.skills
            .values()
            .map(|s| SkillListing {
                name: s.name.clone(),
                description: s.description.clone(),
                source: s.source,
                dir: s.dir.clone(),
                allowed_tools: s.allowed_tools.clone(),
                allowed_tools_granted: self.grants(s),
                model_invocable: s.model_invocable(),
                loaded: self.loaded.contains(&s.name),
            })
            .collect()
    }

    /// The `allowed-tools` rules of every loaded skill that [grants
    /// them](SkillSet::grants), deduplicated, for the engine to add as allow
    /// rules while those skills are active. A workspace skill's rules are
    /// left out unless the operator trusts the workspace.
    pub fn active_allowed_tools(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.loaded()
            .into_iter()
            .filter(|s| self.grants(s))
            .flat_map(|s| s.allowed_tools.iter())
            .filter(|r| seen.insert(r.as_str()))
            .cloned()
            .collect()
    }

    /// The text that tells the model which skills it can invoke and how.
    /// Empty when there are none.
    pub fn catalog_prompt(&self) -> String {
        let available = self.available();
        if available.is_empty() {
            return String::new();
        }
        let mut out = String::from(
            "# Skills\n\
             Skills are packaged instructions (and sometimes scripts or reference files) for \
             specific tasks. When a task matches a skill's description, invoke the skill before \
             starting: call the `skill` tool with {\"name\": \"<skill name>\"}. Its instructions \
             come back as the tool result; follow them. Invoke a skill only once per task.\n\n\
             Available skills:\n",
        );
        out.push_str(&catalog_lines(&available));
        out
    }

    fn unknown(&self, name: &str) -> SkillError {
        SkillError::Unknown {
            name: name.to_string(),
            available: self.names(),
        }
    }
}

/// `- name: description` lines.
pub(crate) fn catalog_lines(skills: &[&Skill]) -> String {
    let mut out = String::new();
    for s in skills {
        // Descriptions may be folded YAML with newlines; one line each keeps
        // the catalog scannable.
        let desc = s
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        out.push_str(&format!("- {}: {}\n", s.name, desc));
    }
    out
}

//! The vocabulary of skills shared by the skills code (gantry-tools), the
//! engine and the adapters: where a skill came from, how a thread lists
//! it, what installing a package did.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where a skill came from. Earlier variants shadow later ones on a name
/// clash during discovery.
///
/// `Workspace` and `Claude` skills live in the workspace, which the model
/// can write (and a cloned repository brings): their `allowed-tools` become
/// allow rules only in a workspace the operator trusts. The others are the
/// user's, the operator's or a client's and always apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillSource {
    /// `<workspace>/.gantry/skills`.
    Workspace,
    /// `<workspace>/.claude/skills`.
    Claude,
    /// `$XDG_CONFIG_HOME/gantry/skills`.
    User,
    /// Given as text (no folder).
    Inline,
    /// Installed into an agent's skills directory from a package.
    Installed,
}

/// One line of a thread's skill listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillListing {
    /// The skill's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Where it came from.
    pub source: SkillSource,
    /// Its folder, if any.
    pub dir: Option<PathBuf>,
    /// Rules it allows while active, as its `SKILL.md` declares them.
    pub allowed_tools: Vec<String>,
    /// Whether those rules take effect in this thread: false for a skill
    /// found in a workspace the operator has not trusted, whose
    /// `allowed-tools` add no rights.
    pub allowed_tools_granted: bool,
    /// Whether the model may invoke it.
    pub model_invocable: bool,
    /// Whether it is loaded in this thread.
    pub loaded: bool,
}

/// What happened to a skill package, as reported to a control plane
/// (`SkillMpStatus` in companyhelm.runner.v1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillPackageStatus {
    /// The package's skills are in the skills directory.
    Installed,
    /// The skill was removed.
    Deleted,
}

/// The status event of an install or delete, for the engine to publish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillPackageUpdate {
    /// The agent whose skills directory changed.
    pub agent_id: String,
    /// The package coordinate (or skill name, for a delete).
    pub package_name: String,
    /// What happened.
    pub status: SkillPackageStatus,
    /// The skills installed or deleted.
    pub skills: Vec<String>,
}

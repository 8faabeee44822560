//! Skills in the Claude Code format: a folder with a `SKILL.md` (YAML front
//! matter with `name`, `description`, optional `allowed-tools` and
//! `disable-model-invocation`, then markdown instructions) and optional
//! extra files.
//!
//! - [`Skill::parse`] reads one `SKILL.md`.
//! - [`discover`] finds the skills of a workspace and a user
//!   (`<workspace>/.gantry/skills`, `<workspace>/.claude/skills`,
//!   `$XDG_CONFIG_HOME/gantry/skills`, first one wins on a name clash).
//! - [`SkillSet`] is a thread's view: what the model may invoke, what is
//!   loaded, the catalog the model sees, and which loaded skills' rules
//!   apply: a skill found in the workspace (which the model can write)
//!   adds instructions but no rights unless the operator trusts the
//!   workspace.
//! - [`SkillTool`] is the `skill` tool the model calls to invoke one.
//! - [`install`] and [`delete`] manage an agent's skills directory from a
//!   package coordinate (local path, `.tar.gz`/`.zip` URL, git URL).

mod archive;
mod discover;
mod install;
mod set;
mod skill;
mod tool;

pub use discover::{default_config_home, discover, discover_dir, skill_dirs};
pub use install::{SkillPackageStatus, SkillPackageUpdate, delete, install};
pub use set::{SharedSkillSet, SkillListing, SkillSet};
pub use skill::{MAX_NAME_LEN, Skill, SkillSource};
pub use tool::SkillTool;

/// Why a skill could not be parsed, found, installed or deleted. Every
/// variant displays as one line meant for a person or a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    /// A `SKILL.md` that does not parse or lacks a required field; `file`
    /// names it (`<dir>/SKILL.md`, or `inline skill`).
    #[error("{file}: {message}")]
    Invalid {
        /// The file (or `inline skill`).
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A file or folder that could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The path involved.
        path: String,
        /// The OS error, in words.
        message: String,
    },
    /// No skill of that name in the set.
    #[error("unknown skill `{name}`; {}", available_list(.available))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names that exist.
        available: Vec<String>,
    },
    /// A package coordinate that is none of the supported kinds.
    #[error("cannot resolve skill package `{package}`: {reason}")]
    Unresolvable {
        /// The coordinate as given.
        package: String,
        /// Why.
        reason: String,
    },
    /// A download that failed (connection, HTTP status, size limit).
    #[error("cannot download skill package {url}: {message}")]
    Download {
        /// The URL.
        url: String,
        /// What went wrong, e.g. `HTTP 404 Not Found`.
        message: String,
    },
    /// `git clone` failed.
    #[error("cannot clone skill package {url}: {message}")]
    Git {
        /// The git URL.
        url: String,
        /// git's own last error line.
        message: String,
    },
    /// An archive entry that would land outside the target folder, or that
    /// Gantry refuses to extract.
    #[error("refusing skill package archive: entry `{entry}` {reason}")]
    UnsafeArchive {
        /// The entry's name in the archive.
        entry: String,
        /// Why it is refused.
        reason: String,
    },
    /// A package that resolved but holds no valid skill.
    #[error("`{package}` is not a valid skill package: {reason}")]
    NotASkill {
        /// The coordinate as given.
        package: String,
        /// Why.
        reason: String,
    },
    /// `delete` of a skill that is not in the skills directory.
    #[error("skill `{name}` is not installed in {dir}")]
    NotInstalled {
        /// The name asked for.
        name: String,
        /// The skills directory.
        dir: String,
    },
}

impl SkillError {
    pub(crate) fn io(path: &std::path::Path, e: &std::io::Error) -> Self {
        SkillError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }
}

/// "available skills: a, b" or "no skills are available", for error messages.
pub(crate) fn available_list(names: &[String]) -> String {
    if names.is_empty() {
        "no skills are available".to_string()
    } else {
        format!("available skills: {}", names.join(", "))
    }
}

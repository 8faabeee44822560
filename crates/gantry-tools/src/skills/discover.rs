//! Finding the skills of a workspace and a user.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{Skill, SkillError, SkillSource};
use crate::workspace_path::WorkspaceDir;

/// The folders searched, highest precedence first:
/// `<workspace>/.gantry/skills`, `<workspace>/.claude/skills`, and
/// `<config_home>/gantry/skills` when a config home is given.
pub fn skill_dirs(workspace: &Path, config_home: Option<&Path>) -> Vec<(PathBuf, SkillSource)> {
    let mut dirs = vec![
        (workspace.join(".gantry/skills"), SkillSource::Workspace),
        (workspace.join(".claude/skills"), SkillSource::Claude),
    ];
    if let Some(home) = config_home {
        dirs.push((home.join("gantry/skills"), SkillSource::User));
    }
    dirs
}

/// `$XDG_CONFIG_HOME`, else `$HOME/.config`; `None` when neither is set.
pub fn default_config_home() -> Option<PathBuf> {
    let from_env = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    // XDG says a relative XDG_CONFIG_HOME is invalid and must be ignored.
    from_env("XDG_CONFIG_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| from_env("HOME").map(|h| h.join(".config")))
}

/// The skills of a workspace and a user, sorted by name. A workspace skill
/// shadows a user skill of the same name (see [`skill_dirs`] for the
/// order). Broken skills come back as errors next to the good ones; a
/// missing folder is simply empty. The workspace's own skills are read
/// beneath it: the model can write there, so a `SKILL.md` (or a skill
/// folder) linked to a file elsewhere, another thread's workspace say, is
/// refused, not read by the daemon on its behalf, and a FIFO is not waited on.
pub fn discover(workspace: &Path, config_home: Option<&Path>) -> (Vec<Skill>, Vec<SkillError>) {
    let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let confined = WorkspaceDir::open(&root).ok();
    let mut skills: Vec<Skill> = Vec::new();
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for (dir, source) in skill_dirs(&root, config_home) {
        let within = match source {
            SkillSource::Workspace | SkillSource::Claude => match &confined {
                Some(ws) => Some(ws),
                // No handle on the workspace: nothing of it can be read safely.
                None => continue,
            },
            _ => None,
        };
        let (found, errs) = discover_in(&dir, source, within);
        errors.extend(errs);
        for skill in found {
            // Earlier folders win; a shadowed skill is expected, not an error.
            if seen.insert(skill.name.clone()) {
                skills.push(skill);
            }
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    (skills, errors)
}

/// The skills in one folder: each subfolder with a `SKILL.md` (symlinked
/// subfolders too). Hidden subfolders (`.install-*` staging) and
/// subfolders without a `SKILL.md` are skipped. Two subfolders declaring
/// the same name: the first (by folder name) wins, the second is reported.
/// A skill's `dir` is its folder's real path, so a skill linked in from a
/// workspace counts as one ([`Skill::from_workspace`]).
pub fn discover_dir(dir: &Path, source: SkillSource) -> (Vec<Skill>, Vec<SkillError>) {
    discover_in(dir, source, None)
}

/// [`discover_dir`], reading each `SKILL.md` beneath `within` when given.
fn discover_in(
    dir: &Path,
    source: SkillSource,
    within: Option<&WorkspaceDir>,
) -> (Vec<Skill>, Vec<SkillError>) {
    let mut skills: Vec<Skill> = Vec::new();
    let mut errors = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (skills, errors),
        Err(e) => {
            errors.push(SkillError::io(dir, &e));
            return (skills, errors);
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    paths.sort();
    for path in paths {
        // `is_dir`/`is_file` follow symlinks: a linked skill folder counts.
        if !path.is_dir() || !path.join("SKILL.md").is_file() {
            continue;
        }
        let parsed = match within {
            Some(ws) => read_beneath(ws, &path.join("SKILL.md"))
                .and_then(|text| Ok(Skill::parse(&text, Some(&path))?.with_source(source))),
            None => Skill::from_dir(&path, source),
        };
        match parsed {
            Ok(mut skill) => {
                // Parsed under the link's name (the default `name`), kept
                // under the real path: where the files can be written.
                if let Ok(real) = std::fs::canonicalize(&path) {
                    skill.dir = Some(real);
                }
                if let Some(first) = skills.iter().find(|s| s.name == skill.name) {
                    errors.push(SkillError::Invalid {
                        file: path.join("SKILL.md").display().to_string(),
                        message: format!(
                            "skill name `{}` is already used by {}; rename one of them",
                            skill.name,
                            first
                                .dir
                                .as_deref()
                                .map(|d| d.display().to_string())
                                .unwrap_or_default()
                        ),
                    });
                } else {
                    skills.push(skill);
                }
            }
            Err(e) => errors.push(e),
        }
    }
    (skills, errors)
}

/// Longest `SKILL.md` read from a workspace.
const MAX_SKILL_BYTES: u64 = 1024 * 1024;

/// The text of `file`, opened beneath `ws` (links followed only while
/// they stay inside), a regular file of at most [`MAX_SKILL_BYTES`].
fn read_beneath(ws: &WorkspaceDir, file: &Path) -> Result<String, SkillError> {
    use std::io::Read;
    let opened = ws.open_read(file).map_err(|e| {
        if crate::workspace_path::is_escape(&e) {
            SkillError::Invalid {
                file: file.display().to_string(),
                message: "links out of the workspace (or by an absolute path): a workspace's \
                          skills are read only from inside it; keep skills shared between \
                          workspaces in $XDG_CONFIG_HOME/gantry/skills"
                    .to_owned(),
            }
        } else {
            SkillError::io(file, &e)
        }
    })?;
    let meta = opened.metadata().map_err(|e| SkillError::io(file, &e))?;
    if !meta.is_file() || meta.len() > MAX_SKILL_BYTES {
        return Err(SkillError::Invalid {
            file: file.display().to_string(),
            message: format!("not a regular file of at most {MAX_SKILL_BYTES} bytes"),
        });
    }
    let mut text = String::new();
    opened
        .take(MAX_SKILL_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| SkillError::io(file, &e))?;
    Ok(text)
}

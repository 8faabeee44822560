//! One skill: `SKILL.md` parsing and the instructions the model gets.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SkillError;

/// Longest accepted skill name (the Agent Skills spec's limit).
pub const MAX_NAME_LEN: usize = 64;
/// Extra files listed for a skill at most; a skill is a few files, and a
/// runaway folder (a vendored `node_modules`) must not flood the context.
const MAX_LISTED_FILES: usize = 200;
/// How deep the extra-file listing goes.
const MAX_LIST_DEPTH: usize = 8;

pub use gantry_types::skill::SkillSource;

/// A parsed skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skill {
    /// `[a-z0-9-]+`, unique within a set.
    pub name: String,
    /// What it is for and when to use it; the model chooses by this.
    pub description: String,
    /// Permission rule strings (`Bash(gh:*)`, `Read`) allowed without asking
    /// while the skill is active.
    pub allowed_tools: Vec<String>,
    /// Only a user (or client) may load it; the model cannot invoke it.
    pub disable_model_invocation: bool,
    /// The markdown instructions after the front matter.
    pub body: String,
    /// The skill's folder; `None` for an inline skill.
    pub dir: Option<PathBuf>,
    /// Where it came from.
    pub source: SkillSource,
}

/// The front matter fields Gantry reads; others (`license`, `metadata`,
/// `version`, `model`...) are accepted and ignored, as Claude Code does.
#[derive(Deserialize, Default)]
struct FrontMatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "allowed-tools")]
    allowed_tools: Option<AllowedTools>,
    #[serde(default, rename = "disable-model-invocation")]
    disable_model_invocation: Option<bool>,
}

/// Claude Code takes `allowed-tools` as a YAML list or as one string.
#[derive(Deserialize)]
#[serde(untagged)]
enum AllowedTools {
    List(Vec<String>),
    Text(String),
    /// Anything else, caught here to give a better message than serde's
    /// "did not match any variant".
    Other(serde::de::IgnoredAny),
}

impl Skill {
    /// Parses the text of a `SKILL.md`. `dir` is the skill's folder (used
    /// in error messages, for the extra files, and as the default `name`
    /// when the front matter has none); without it the skill is inline.
    ///
    /// The source is [`SkillSource::Inline`] without a `dir` and
    /// [`SkillSource::Installed`] with one; discovery sets the real source
    /// with [`Skill::with_source`].
    pub fn parse(text: &str, dir: Option<&Path>) -> Result<Skill, SkillError> {
        let file = match dir {
            Some(d) => d.join("SKILL.md").display().to_string(),
            None => "inline skill".to_string(),
        };
        let invalid = |message: String| SkillError::Invalid {
            file: file.clone(),
            message,
        };
        let (yaml, body) = split_front_matter(text).ok_or_else(|| {
            invalid(
                "no YAML front matter: the file must start with a `---` line, then \
                 `name:` and `description:`, then a closing `---` line"
                    .to_string(),
            )
        })?;
        let fm: FrontMatter = if yaml.trim().is_empty() {
            FrontMatter::default()
        } else {
            // The snippet rendering is multi-line; the plain message with
            // its line and column is what fits in one error line.
            serde_saphyr::from_str(yaml).map_err(|e| {
                invalid(format!(
                    "invalid front matter (lines counted from the opening `---`): {}",
                    one_line(&e.without_snippet().to_string())
                ))
            })?
        };

        // The Agent Skills spec says the name matches the folder; Claude
        // Code falls back to the folder name when `name` is missing.
        let name = match fm.name.map(|n| n.trim().to_string()) {
            Some(n) if !n.is_empty() => n,
            _ => match dir.and_then(|d| d.file_name()).and_then(|n| n.to_str()) {
                Some(folder) => folder.to_string(),
                None => return Err(invalid("missing `name` in the front matter".to_string())),
            },
        };
        check_name(&name).map_err(invalid)?;

        let description = fm
            .description
            .map(|d| d.trim().to_string())
            .unwrap_or_default();
        if description.is_empty() {
            return Err(invalid(
                "missing `description` in the front matter: say what the skill does and when \
                 to use it"
                    .to_string(),
            ));
        }

        let allowed_tools = match fm.allowed_tools {
            None => Vec::new(),
            Some(AllowedTools::List(list)) => list
                .into_iter()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect(),
            Some(AllowedTools::Text(text)) => split_tool_list(&text),
            Some(AllowedTools::Other(_)) => {
                return Err(invalid(
                    "`allowed-tools` must be a list of rules or one string of rules separated \
                     by commas or spaces (e.g. `Bash(gh:*), Read`)"
                        .to_string(),
                ));
            }
        };

        Ok(Skill {
            name,
            description,
            allowed_tools,
            disable_model_invocation: fm.disable_model_invocation.unwrap_or(false),
            body: body.trim().to_string(),
            dir: dir.map(Path::to_path_buf),
            source: if dir.is_some() {
                SkillSource::Installed
            } else {
                SkillSource::Inline
            },
        })
    }

    /// Reads and parses `<dir>/SKILL.md`.
    pub fn from_dir(dir: &Path, source: SkillSource) -> Result<Skill, SkillError> {
        let path = dir.join("SKILL.md");
        let text = std::fs::read_to_string(&path).map_err(|e| SkillError::io(&path, &e))?;
        Ok(Skill::parse(&text, Some(dir))?.with_source(source))
    }

    /// The same skill with another source.
    pub fn with_source(mut self, source: SkillSource) -> Skill {
        self.source = source;
        self
    }

    /// Whether the model may invoke it (`disable-model-invocation` is not set).
    pub fn model_invocable(&self) -> bool {
        !self.disable_model_invocation
    }

    /// The skill's extra files (everything but `SKILL.md`), as sorted
    /// `/`-separated paths relative to its folder. Hidden files and `.git`
    /// are left out; so is a folder that cannot be read. Empty for an
    /// inline skill. Reads the filesystem: call it off the async threads.
    pub fn files(&self) -> Vec<String> {
        let Some(dir) = &self.dir else {
            return Vec::new();
        };
        let mut out = Vec::new();
        list_files(dir, "", 0, &mut out);
        out.sort();
        out
    }

    /// Whether the skill lives in `workspace`, the thread's (canonical)
    /// workspace: found in its `.gantry/skills` or `.claude/skills`, or in
    /// any folder inside it (a user's config dir when the workspace is the
    /// home directory). The model can write such a skill, so its
    /// `allowed-tools` must not grant rights unless the operator trusts
    /// the workspace. Without a workspace only the source tells.
    pub fn from_workspace(&self, workspace: Option<&Path>) -> bool {
        matches!(self.source, SkillSource::Workspace | SkillSource::Claude)
            || self
                .dir
                .as_deref()
                .zip(workspace)
                .is_some_and(|(dir, ws)| dir.starts_with(ws))
    }

    /// What the model is given when the skill is invoked or loaded: its
    /// folder, the instructions, the rules it allows (or that they are
    /// ignored, when `granted` is false: see [`Skill::from_workspace`]) and
    /// its extra files (`files`, from [`Skill::files`]).
    pub fn render_instructions(&self, files: &[String], granted: bool) -> String {
        let mut out = format!(
            "Skill `{}` is now active. Follow its instructions.\n",
            self.name
        );
        if let Some(dir) = &self.dir {
            out.push_str(&format!(
                "Base directory for this skill: {}\n",
                dir.display()
            ));
        }
        if !self.allowed_tools.is_empty() {
            if granted {
                out.push_str(&format!(
                    "Allowed without asking while it is active: {}\n",
                    self.allowed_tools.join(", ")
                ));
            } else {
                // Said to the model so it expects refusals or approval
                // prompts instead of retrying as if the rules applied.
                out.push_str(&format!(
                    "{}; these tools follow the thread's permission rules (they may be \
                     refused or need approval).\n",
                    self.ignored_note()
                ));
            }
        }
        out.push('\n');
        out.push_str(&self.body);
        out.push('\n');
        if !files.is_empty() {
            out.push_str("\nFiles in this skill (relative to its base directory):\n");
            for f in files {
                out.push_str(&format!("- {f}\n"));
            }
            if files.len() >= MAX_LISTED_FILES {
                out.push_str("- ... (more files not listed)\n");
            }
        }
        out
    }

    /// [`Skill::render_instructions`] with the files read now.
    pub fn instructions(&self, granted: bool) -> String {
        self.render_instructions(&self.files(), granted)
    }

    /// One line saying this skill's `allowed-tools` are ignored because its
    /// workspace is not trusted, for logs and the model.
    pub fn ignored_note(&self) -> String {
        format!(
            "allowed-tools of workspace skill `{}` ignored ({}): workspace not trusted by the \
             operator",
            self.name,
            self.allowed_tools.join(", ")
        )
    }
}

/// Checks a skill name: `[a-z0-9-]+`, at most [`MAX_NAME_LEN`] characters.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if name.is_empty() || !ok_chars {
        return Err(format!(
            "invalid skill name `{name}`: use lowercase letters, digits and hyphens only \
             (e.g. `pdf-forms`)"
        ));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "invalid skill name `{name}`: longer than {MAX_NAME_LEN} characters"
        ));
    }
    Ok(())
}

/// Splits `---\n<yaml>\n---\n<body>`. `None` when the text does not open
/// with a front matter block or the block is not closed.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next()?;
    if first.trim_end() != "---" {
        return None;
    }
    let yaml_start = first.len();
    let mut pos = yaml_start;
    for line in lines {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            return Some((&text[yaml_start..pos], &text[pos + line.len()..]));
        }
        pos += line.len();
    }
    None
}

/// `Bash(gh:*), Read Grep` -> `["Bash(gh:*)", "Read", "Grep"]`: commas and
/// spaces separate rules except inside parentheses (`Bash(git status:*)`).
fn split_tool_list(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ',' | ' ' | '\t' | '\n' | '\r' if depth == 0 => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// A multi-line parser message (with a source snippet) as one line.
fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn list_files(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_LIST_DEPTH || out.len() >= MAX_LISTED_FILES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if out.len() >= MAX_LISTED_FILES {
            return;
        }
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if name.starts_with('.') || (depth == 0 && name == "SKILL.md") {
            continue;
        }
        let rel = format!("{prefix}{name}");
        // file_type does not follow symlinks, so a link to a folder is
        // listed as a file rather than walked (no loops).
        match entry.file_type() {
            Ok(t) if t.is_dir() => list_files(&entry.path(), &format!("{rel}/"), depth + 1, out),
            Ok(_) => out.push(rel),
            Err(_) => {}
        }
    }
}

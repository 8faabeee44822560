//! Permission rules: parsing `Tool(specifier)` and matching one against a
//! single thing a tool call does (a simple command, a file, a tool name).
//!
//! | rule | matches |
//! |---|---|
//! | `Bash`, `Bash(*)` | every shell command |
//! | `Bash(git status:*)` | `git status` and `git status ARGS...` (whole words) |
//! | `Bash(npm run test *)` | glob over the command line; `*` is any text; a trailing ` *` also matches no arguments |
//! | `Bash(cargo build)` | exactly that command |
//! | `Read(src/**/*.rs)` | `read_file` (and `list_dir`, `glob`, `grep` by their `path`) on matching paths |
//! | `Write(...)`, `Edit(...)` | `write_file`, `edit_file`, and files a shell command redirects into (the two names are synonyms) |
//! | `Grep`, `Glob`, `LS` | those tools, optionally with a path glob |
//! | `mcp__server__tool`, `mcp__server__*`, `mcp__server` | MCP tools by name |
//!
//! Gantry's own names work as rule names too (`shell(cargo:*)`,
//! `read_file(...)`). Path globs are relative to the workspace unless they
//! start with `/`; `*` stays within a directory, `**` crosses directories.
//!
//! Deny and ask rules match more eagerly than allow rules: they also match
//! a command run by absolute path (`/bin/rm` for `Bash(rm:*)`) or behind
//! variable assignments (`FOO=1 rm`), and a path rule matches a file whose
//! name is only known at run time. An allow rule only ever matches what it
//! says. A rule that does not parse matches every call of its tool when it
//! is a deny or ask rule, and nothing when it is an allow rule.

mod glob;
mod path;
mod spec;

use std::path::Path;

use crate::shell::{SimpleCommand, WordKind, basename};
pub use glob::glob_matches;
use glob::tool_name_matches;
pub use path::normalize;
use path::path_matches;
use spec::{Spec, explain, parse_spec};

/// Which list a rule comes from; deny and ask rules match more eagerly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    /// From the allow list.
    Allow,
    /// From the ask list.
    Ask,
    /// From the deny list.
    Deny,
}

impl RuleKind {
    fn eager(self) -> bool {
        !matches!(self, RuleKind::Allow)
    }
}

/// The tool family a rule names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleTool {
    /// `Bash` / `shell`.
    Bash,
    /// `Read` / `read_file`.
    Read,
    /// `Write`, `Edit`, `write_file`, `edit_file`.
    Write,
    /// `Grep` / `grep`.
    Grep,
    /// `Glob` / `glob`.
    Glob,
    /// `LS` / `list_dir`.
    Ls,
    /// Any other tool, by name (MCP tools); may contain `*`.
    Named(String),
}

impl RuleTool {
    fn from_name(name: &str) -> RuleTool {
        match name {
            "Bash" | "shell" => RuleTool::Bash,
            "Read" | "read_file" => RuleTool::Read,
            "Write" | "Edit" | "MultiEdit" | "write_file" | "edit_file" => RuleTool::Write,
            "Grep" | "grep" => RuleTool::Grep,
            "Glob" | "glob" => RuleTool::Glob,
            "LS" | "list_dir" => RuleTool::Ls,
            other => RuleTool::Named(other.to_owned()),
        }
    }

    fn takes_path(&self) -> bool {
        matches!(
            self,
            RuleTool::Read | RuleTool::Write | RuleTool::Grep | RuleTool::Glob | RuleTool::Ls
        )
    }
}

/// Why a rule does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub message: String,
}

impl std::fmt::Display for RuleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invalid permission rule `{}`: {}",
            self.rule, self.message
        )
    }
}

impl std::error::Error for RuleError {}

/// A parsed permission rule.
#[derive(Debug, Clone)]
pub struct Rule {
    raw: String,
    tool: RuleTool,
    spec: Spec,
}

/// One thing a tool call does, as rules see it.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    /// A simple shell command.
    Command(&'a SimpleCommand),
    /// A file access by a file tool or a shell redirection. `path` is
    /// absolute and lexically normalised; `None` when it is only known at
    /// run time.
    Path {
        /// Which family of rules applies.
        tool: PathTool,
        /// The file.
        path: Option<&'a Path>,
    },
    /// A shell command the analysis cannot see through.
    OpaqueCommand,
    /// Any other tool, by its Gantry name.
    Tool(&'a str),
}

/// The file tools, as rule families see them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathTool {
    /// `read_file`.
    Read,
    /// `write_file`, `edit_file`, shell redirections.
    Write,
    /// `grep`.
    Grep,
    /// `glob`.
    Glob,
    /// `list_dir`.
    Ls,
}

impl Rule {
    /// Parses `Tool` or `Tool(specifier)`.
    pub fn parse(raw: &str) -> Result<Rule, RuleError> {
        let rule = Rule::parse_lenient(raw);
        match rule {
            Some(Rule {
                spec: Spec::Invalid,
                ..
            })
            | None => Err(RuleError {
                rule: raw.to_owned(),
                message: explain(raw),
            }),
            Some(r) => Ok(r),
        }
    }

    /// Like [`Rule::parse`], but a rule whose tool name is readable and whose
    /// specifier is not comes back with an invalid specifier (which fails
    /// closed, see the module doc). `None` if even the name is unreadable.
    pub(crate) fn parse_lenient(raw: &str) -> Option<Rule> {
        let text = raw.trim();
        let (name, spec) = match text.find('(') {
            Some(open) => {
                let inner = text.get(open + 1..)?.strip_suffix(')');
                (text.get(..open)?.trim(), Some(inner))
            }
            None => (text, None),
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '.'))
        {
            return None;
        }
        let tool = RuleTool::from_name(name);
        let spec = match spec {
            None => Spec::Any,
            Some(None) => Spec::Invalid,
            Some(Some(inner)) => parse_spec(&tool, inner.trim()),
        };
        Some(Rule {
            raw: raw.to_owned(),
            tool,
            spec,
        })
    }

    /// The rule as written.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// Whether the rule applies to every call of its tool (`Bash`, `Read`).
    pub fn is_tool_wide(&self) -> bool {
        matches!(self.spec, Spec::Any)
    }

    /// Whether this is a shell rule.
    pub fn is_bash(&self) -> bool {
        self.tool == RuleTool::Bash
    }

    /// Whether the rule, from list `kind`, matches `subject`.
    pub fn matches(&self, kind: RuleKind, subject: Subject<'_>, workspace: &Path) -> bool {
        if matches!(self.spec, Spec::Invalid) {
            return kind.eager() && self.covers(subject);
        }
        match subject {
            Subject::Command(cmd) => self.tool == RuleTool::Bash && self.matches_command(kind, cmd),
            Subject::OpaqueCommand => {
                // Only a tool-wide rule can say anything about a command we
                // cannot see.
                self.tool == RuleTool::Bash && matches!(self.spec, Spec::Any)
            }
            Subject::Path { path, .. } => {
                if !self.covers(subject) {
                    return false;
                }
                match &self.spec {
                    Spec::Any => true,
                    Spec::Path { matcher, absolute } => match path {
                        Some(p) => path_matches(matcher, *absolute, p, workspace),
                        None => kind.eager(),
                    },
                    _ => false,
                }
            }
            Subject::Tool(name) => match &self.tool {
                RuleTool::Named(pattern) => {
                    matches!(self.spec, Spec::Any) && tool_name_matches(pattern, name)
                }
                _ => false,
            },
        }
    }

    /// Whether the rule's tool family covers the subject at all.
    fn covers(&self, subject: Subject<'_>) -> bool {
        match subject {
            Subject::Command(_) | Subject::OpaqueCommand => self.tool == RuleTool::Bash,
            Subject::Path { tool, .. } => matches!(
                (&self.tool, tool),
                (
                    RuleTool::Read,
                    PathTool::Read | PathTool::Grep | PathTool::Glob | PathTool::Ls
                ) | (RuleTool::Write, PathTool::Write)
                    | (RuleTool::Grep, PathTool::Grep)
                    | (RuleTool::Glob, PathTool::Glob)
                    | (RuleTool::Ls, PathTool::Ls)
            ),
            Subject::Tool(name) => match &self.tool {
                RuleTool::Named(pattern) => tool_name_matches(pattern, name),
                _ => false,
            },
        }
    }

    fn matches_command(&self, kind: RuleKind, cmd: &SimpleCommand) -> bool {
        if matches!(self.spec, Spec::Any) {
            return true;
        }
        if cmd.argv.is_empty() {
            // A bare assignment: only an exact rule written with it matches.
            return matches!(&self.spec, Spec::Exact(w) if *w == cmd.assignments)
                || matches!(&self.spec, Spec::Glob(g) if glob_matches(g, &cmd.text()));
        }
        let words = cmd.words();
        // What an allow rule sees: the command exactly as written, its
        // assignments included (`FOO=1 cargo` is not `cargo`: the variable
        // could be `LD_PRELOAD` or `PATH`).
        let mut written: Vec<&str> = cmd.assignments.iter().map(String::as_str).collect();
        written.extend(&words);
        let mut candidates = vec![written];
        if kind.eager() {
            // Deny and ask rules also see through assignments and paths.
            candidates.push(words.clone());
            if let Some(first) = cmd.argv.first()
                && first.kind == WordKind::Literal
                && basename(&first.text) != first.text
            {
                let mut short = words.clone();
                short[0] = basename(&first.text);
                candidates.push(short);
            }
        }
        candidates.iter().any(|c| self.matches_words(c))
    }

    fn matches_words(&self, words: &[&str]) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Prefix(prefix) => {
                words.len() >= prefix.len() && prefix.iter().zip(words).all(|(p, w)| p == w)
            }
            Spec::Exact(exact) => {
                words.len() == exact.len() && exact.iter().zip(words).all(|(p, w)| p == w)
            }
            Spec::Glob(pattern) => glob_matches(pattern, &words.join(" ")),
            Spec::Path { .. } | Spec::Invalid => false,
        }
    }
}

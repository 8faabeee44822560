//! What the permission rules alone say about a call: every part of it (each
//! simple command and redirection of a shell line, or the file or tool it
//! names) judged against the allow, ask and deny lists.

use std::path::{Path, PathBuf};

use gantry_types::{PermissionRules, RuleDecision};

use crate::request::ToolRequest;
use crate::rules::{PathTool, Rule, RuleKind, Subject, normalize};
use crate::shell::{ShellAnalysis, ShellPart, analyze};

/// What the rules say about one call, before the approval and confirmation
/// policies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) decision: RuleDecision,
    pub(crate) rules: Vec<String>,
    /// Every part was decided by a matching rule, not by the default: an
    /// explicit allow skips the `untrusted` check.
    pub(crate) explicit: bool,
}

/// `CheckPermission`: the rules' decision for `req` and the rules that
/// produced it. With the rules disabled, everything is allowed by no rule.
///
/// A shell command is split into its parts (see [`crate::shell`]); every
/// part must be allowed. One part denied denies the call; one part asked
/// (or not understood) asks.
pub fn check_permission(
    rules: &PermissionRules,
    req: &ToolRequest<'_>,
) -> (RuleDecision, Vec<String>) {
    let o = evaluate(rules, req);
    (o.decision, o.rules)
}

pub(crate) fn evaluate(rules: &PermissionRules, req: &ToolRequest<'_>) -> Outcome {
    if !rules.enabled {
        return Outcome {
            decision: RuleDecision::Allow,
            rules: Vec::new(),
            explicit: false,
        };
    }
    let compiled = Compiled::new(rules);
    let mut verdicts: Vec<PartVerdict> = Vec::new();
    match subjects_of(req) {
        Subjects::Shell { analysis, cwd } => {
            for part in &analysis.parts {
                let v = match part {
                    ShellPart::Command(cmd) => {
                        compiled.judge(Subject::Command(cmd), cmd.transparent, req.workspace)
                    }
                    ShellPart::Write(path) => {
                        let resolved = path.as_deref().and_then(|p| {
                            let p = Path::new(p);
                            // After a `cd`, a relative name could be anywhere.
                            (p.is_absolute() || !analysis.changes_dir).then(|| normalize(&cwd, p))
                        });
                        compiled.judge(
                            Subject::Path {
                                tool: PathTool::Write,
                                path: resolved.as_deref(),
                            },
                            false,
                            req.workspace,
                        )
                    }
                    ShellPart::Opaque(_) => compiled.judge_opaque(req.workspace),
                };
                verdicts.extend(v);
            }
        }
        Subjects::Path { tool, path } => verdicts.extend(compiled.judge(
            Subject::Path {
                tool,
                path: path.as_deref(),
            },
            false,
            req.workspace,
        )),
        Subjects::Tool => {
            verdicts.extend(compiled.judge(Subject::Tool(req.tool), false, req.workspace))
        }
    }
    if verdicts.is_empty() {
        // Nothing runs (an empty command line): the default stands.
        return Outcome {
            decision: rules.default,
            rules: Vec::new(),
            explicit: false,
        };
    }
    let decision = verdicts
        .iter()
        .map(|v| v.decision)
        .fold(RuleDecision::Allow, RuleDecision::stricter);
    let mut matched: Vec<String> = Vec::new();
    for v in verdicts.iter().filter(|v| v.decision == decision) {
        for r in &v.rules {
            if !matched.contains(r) {
                matched.push(r.clone());
            }
        }
    }
    Outcome {
        decision,
        rules: matched,
        explicit: verdicts.iter().all(|v| v.explicit),
    }
}

/// What the rules say about one part of a call.
struct PartVerdict {
    decision: RuleDecision,
    rules: Vec<String>,
    explicit: bool,
}

/// A rule set parsed once per call.
struct Compiled {
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
    default: RuleDecision,
}

impl Compiled {
    fn new(rules: &PermissionRules) -> Self {
        let parse = |list: &[String]| list.iter().filter_map(|r| Rule::parse_lenient(r)).collect();
        Self {
            allow: parse(&rules.allow),
            ask: parse(&rules.ask),
            deny: parse(&rules.deny),
            default: rules.default,
        }
    }

    fn matching(list: &[Rule], kind: RuleKind, subject: Subject<'_>, ws: &Path) -> Vec<String> {
        list.iter()
            .filter(|r| r.matches(kind, subject, ws))
            .map(|r| r.as_str().to_owned())
            .collect()
    }

    /// Deny > ask > allow > default. A transparent wrapper that no rule
    /// names says nothing (`None`): what it runs is judged on its own.
    fn judge(&self, subject: Subject<'_>, transparent: bool, ws: &Path) -> Option<PartVerdict> {
        for (list, kind, decision) in [
            (&self.deny, RuleKind::Deny, RuleDecision::Deny),
            (&self.ask, RuleKind::Ask, RuleDecision::Ask),
            (&self.allow, RuleKind::Allow, RuleDecision::Allow),
        ] {
            let rules = Self::matching(list, kind, subject, ws);
            if !rules.is_empty() {
                return Some(PartVerdict {
                    decision,
                    rules,
                    explicit: true,
                });
            }
        }
        (!transparent).then_some(PartVerdict {
            decision: self.default,
            rules: Vec::new(),
            explicit: false,
        })
    }

    /// A part the shell analysis cannot see through: a tool-wide `Bash`
    /// rule still applies; otherwise it cannot be proved safe, so it is at
    /// least asked, and a tool-wide allow only counts when no narrower
    /// `Bash(...)` deny or ask rule could have been dodged.
    fn judge_opaque(&self, ws: &Path) -> Option<PartVerdict> {
        let v = self.judge(Subject::OpaqueCommand, false, ws)?;
        if v.explicit {
            let narrower = self
                .deny
                .iter()
                .chain(&self.ask)
                .any(|r| r.is_bash() && !r.is_tool_wide());
            if v.decision != RuleDecision::Allow || !narrower {
                return Some(v);
            }
        }
        Some(PartVerdict {
            decision: self.default.stricter(RuleDecision::Ask),
            rules: Vec::new(),
            explicit: false,
        })
    }
}

/// What a call is made of, as the rules see it.
enum Subjects {
    Shell {
        analysis: ShellAnalysis,
        cwd: PathBuf,
    },
    Path {
        tool: PathTool,
        path: Option<PathBuf>,
    },
    Tool,
}

fn subjects_of(req: &ToolRequest<'_>) -> Subjects {
    let resolve = |p: &str| normalize(req.workspace, Path::new(p));
    match req.tool {
        "shell" => {
            let cwd = req.arg("workdir").map_or_else(|| resolve("."), resolve);
            let analysis = match req.arg("command") {
                Some(command) => analyze(command),
                None => ShellAnalysis {
                    parts: vec![ShellPart::Opaque("no command".into())],
                    changes_dir: false,
                },
            };
            Subjects::Shell { analysis, cwd }
        }
        "read_file" | "write_file" | "edit_file" => Subjects::Path {
            tool: if req.tool == "read_file" {
                PathTool::Read
            } else {
                PathTool::Write
            },
            // No path: the tool will refuse, but do not assume where.
            path: req.arg("path").map(resolve),
        },
        "list_dir" | "glob" | "grep" => Subjects::Path {
            tool: match req.tool {
                "list_dir" => PathTool::Ls,
                "glob" => PathTool::Glob,
                _ => PathTool::Grep,
            },
            path: Some(resolve(req.arg("path").unwrap_or("."))),
        },
        _ => Subjects::Tool,
    }
}

//! The one decision per tool call: permission rules, session grants, the
//! approval policy and the confirmation policy folded into a [`Verdict`].
//! The precedence is documented on the [`super`] module.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use gantry_types::{
    ApprovalDecision, ApprovalDecisionKind, ApprovalPolicy, ApprovalRequest, Lane, PermissionRules,
    RuleDecision, ThreadPolicy, TimeoutAction,
};
use serde_json::Value;

use super::rules::{PathTool, Rule, RuleKind, Subject, normalize};
use super::safe_commands::is_safe_command_line;
use super::shell::{ShellAnalysis, ShellPart, analyze};

/// One tool call to decide on.
#[derive(Debug, Clone, Copy)]
pub struct ToolRequest<'a> {
    /// Gantry tool name: `shell`, `read_file`, ..., `mcp__server__tool`.
    pub tool: &'a str,
    /// The call's arguments as the model sent them.
    pub args: &'a Value,
    /// The thread's workspace directory; relative paths resolve against it.
    pub workspace: &'a Path,
}

/// What to do with a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Do not run it; `reason` goes back to the model.
    Deny {
        /// Why, for the model.
        reason: String,
        /// The rules that matched.
        rules: Vec<String>,
    },
    /// Ask a human first.
    Ask {
        /// Why approval is needed.
        reason: String,
        /// The rules that matched.
        rules: Vec<String>,
        /// How long to wait for an answer.
        timeout_ms: u64,
        /// What an unanswered request turns into.
        on_timeout: TimeoutAction,
    },
}

/// Remembered "approve for this session" answers: identical requests are
/// allowed without asking again.
#[derive(Debug, Clone, Default)]
pub struct SessionGrants {
    granted: HashSet<(String, String)>,
}

impl SessionGrants {
    /// Remembers that requests identical to `req` are approved.
    pub fn insert(&mut self, req: &ToolRequest<'_>) {
        self.granted.insert(grant_key(req));
    }

    /// Whether a request identical to `req` was approved for the session.
    pub fn contains(&self, req: &ToolRequest<'_>) -> bool {
        self.granted.contains(&grant_key(req))
    }

    /// How many grants are remembered.
    pub fn len(&self) -> usize {
        self.granted.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.granted.is_empty()
    }
}

/// What identical means: same tool and same arguments; for `shell`, the
/// same command line in the same directory (a different time limit is the
/// same command).
fn grant_key(req: &ToolRequest<'_>) -> (String, String) {
    let key = if req.tool == "shell" {
        let command = req
            .args
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or("");
        let workdir = req
            .args
            .get("workdir")
            .and_then(Value::as_str)
            .unwrap_or("");
        format!("{workdir}\0{command}")
    } else {
        canonical_json(req.args)
    };
    (req.tool.to_owned(), key)
}

/// JSON with object keys sorted, so that key order does not make two
/// requests different (whatever map order serde_json was built with).
fn canonical_json(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let body: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical_json(v)))
                .collect();
            format!("{{{}}}", body.join(","))
        }
        Value::Array(items) => {
            let body: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", body.join(","))
        }
        other => other.to_string(),
    }
}

/// The lane of a tool call: the read-only built-ins (the language-server
/// queries included) are `query`; everything
/// else, unknown and MCP tools included, is `execute`, because its effects
/// are not known. (`control` and `generate` are the engine's own work, never
/// a model's tool call.)
pub fn lane_of(tool: &str) -> Lane {
    match tool {
        "read_file" | "list_dir" | "glob" | "grep" => Lane::Query,
        t if is_lsp_query(t) => Lane::Query,
        _ => Lane::Execute,
    }
}

/// The language-server tools: they only read (files through the server).
/// Rules name them like any tool (`lsp_hover`, `lsp_*`).
fn is_lsp_query(tool: &str) -> bool {
    matches!(
        tool,
        "lsp_hover" | "lsp_definition" | "lsp_references" | "lsp_symbols" | "lsp_diagnostics"
    )
}

/// Whether the engine should ask to re-run a failed (sandboxed) command
/// without the sandbox: the `on-failure` approval policy.
pub fn asks_on_failure(policy: &ThreadPolicy) -> bool {
    matches!(policy.approval, ApprovalPolicy::OnFailure)
}

/// Tools with no effect outside the thread itself (and, for the memory
/// tools, its agent's shared memory in the engine's own store).
pub const THREAD_STATE_TOOLS: [&str; 4] = ["todo_write", "skill", "remember", "recall"];

/// What the rules say about one call, before the approval and confirmation
/// policies.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Outcome {
    decision: RuleDecision,
    rules: Vec<String>,
    /// Every part was decided by a matching rule, not by the default: an
    /// explicit allow skips the `untrusted` check.
    explicit: bool,
}

/// `CheckPermission`: the rules' decision for `req` and the rules that
/// produced it. With the rules disabled, everything is allowed by no rule.
///
/// A shell command is split into its parts (see [`super::shell`]); every
/// part must be allowed. One part denied denies the call; one part asked
/// (or not understood) asks.
pub fn check_permission(
    rules: &PermissionRules,
    req: &ToolRequest<'_>,
) -> (RuleDecision, Vec<String>) {
    let o = evaluate(rules, req);
    (o.decision, o.rules)
}

fn evaluate(rules: &PermissionRules, req: &ToolRequest<'_>) -> Outcome {
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
    let arg = |name: &str| req.args.get(name).and_then(Value::as_str);
    let resolve = |p: &str| normalize(req.workspace, Path::new(p));
    match req.tool {
        "shell" => {
            let cwd = arg("workdir").map_or_else(|| resolve("."), resolve);
            let analysis = match arg("command") {
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
            path: arg("path").map(resolve),
        },
        "list_dir" | "glob" | "grep" => Subjects::Path {
            tool: match req.tool {
                "list_dir" => PathTool::Ls,
                "glob" => PathTool::Glob,
                _ => PathTool::Grep,
            },
            path: Some(resolve(arg("path").unwrap_or("."))),
        },
        _ => Subjects::Tool,
    }
}

/// Whether the `untrusted` policy runs `req` without asking: the read-only
/// built-ins (the language-server queries included), and shell command
/// lines made only of known-safe commands.
pub fn is_known_safe(req: &ToolRequest<'_>) -> bool {
    match req.tool {
        "read_file" | "list_dir" | "glob" | "grep" => true,
        t if is_lsp_query(t) => true,
        "shell" => req
            .args
            .get("command")
            .and_then(Value::as_str)
            .is_some_and(|c| is_safe_command_line(&analyze(c))),
        _ => false,
    }
}

/// Who wants to ask, which decides whether a `reject` policy refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AskSource {
    /// An `ask` rule, or a part the rules could not judge.
    Rules,
    /// The `untrusted` approval policy.
    Untrusted,
    /// The confirmation policy.
    Confirmation,
}

/// Whether a confirmation-policy tool list names `tool`; Gantry names and
/// rule names both work, case-insensitively (`shell`, `Bash`, `bash`).
fn listed(list: &[String], tool: &str) -> bool {
    let alias = match tool {
        "shell" => "bash",
        "read_file" => "read",
        "write_file" => "write",
        "edit_file" => "edit",
        "list_dir" => "ls",
        other => other,
    };
    list.iter()
        .any(|t| t.eq_ignore_ascii_case(tool) || t.eq_ignore_ascii_case(alias))
}

/// The decision for one tool call. Precedence (see the module doc):
///
/// 1. permission rules deny → deny (a session grant does not override a
///    deny rule added later);
/// 2. a session grant for an identical request → allow;
/// 3. rules ask → ask; rules allow by a matching rule → allow; otherwise
///    the approval policy: `untrusted` asks unless [`is_known_safe`], the
///    others allow;
/// 4. confirmation policy (when enabled): a yolo lane or an auto-approve
///    tool allows whatever 3 would ask; a require-confirm tool, or any
///    `execute`-lane tool not auto-approved, asks;
/// 5. an ask under approval `never`, or under `reject` for a kind of prompt
///    it lists, becomes a deny that tells the model why.
pub fn decide(policy: &ThreadPolicy, grants: &SessionGrants, req: &ToolRequest<'_>) -> Verdict {
    // Tools that only touch the thread's own state (its task list, a skill's
    // instructions) are always allowed: a deny-by-default rule set must not
    // stop the agent from planning or reading a skill.
    if THREAD_STATE_TOOLS.contains(&req.tool) {
        return Verdict::Allow;
    }
    let outcome = evaluate(&policy.permissions, req);
    if outcome.decision == RuleDecision::Deny {
        return Verdict::Deny {
            reason: format!(
                "`{}` was not run: denied by permission rule {}",
                req.tool,
                quote_rules(&outcome.rules, "(default decision)")
            ),
            rules: outcome.rules,
        };
    }
    if grants.contains(req) {
        return Verdict::Allow;
    }

    let mut ask: Option<(String, Vec<String>, AskSource)> = match outcome.decision {
        RuleDecision::Ask => Some((
            format!(
                "permission rule {} asks before `{}`",
                quote_rules(&outcome.rules, "default"),
                req.tool
            ),
            outcome.rules,
            AskSource::Rules,
        )),
        _ if outcome.explicit => None,
        _ => match policy.approval {
            ApprovalPolicy::Untrusted if !is_known_safe(req) => Some((
                format!(
                    "`{}` is not a known-safe read-only command (approval policy `untrusted`)",
                    req.tool
                ),
                Vec::new(),
                AskSource::Untrusted,
            )),
            _ => None,
        },
    };

    let confirmation = &policy.confirmation;
    if confirmation.enabled {
        let lane = lane_of(req.tool);
        if confirmation.yolo_lanes.contains(&lane) {
            ask = None;
        } else if listed(&confirmation.require_confirm_tools, req.tool) {
            ask.get_or_insert_with(|| {
                (
                    format!("`{}` requires confirmation", req.tool),
                    Vec::new(),
                    AskSource::Confirmation,
                )
            });
        } else if listed(&confirmation.auto_approve_tools, req.tool) {
            ask = None;
        } else if lane == Lane::Execute {
            ask.get_or_insert_with(|| {
                (
                    format!("`{}` has effects and confirmation is on", req.tool),
                    Vec::new(),
                    AskSource::Confirmation,
                )
            });
        }
    }

    let Some((reason, rules, source)) = ask else {
        return Verdict::Allow;
    };
    match policy.approval {
        ApprovalPolicy::Never => Verdict::Deny {
            reason: format!(
                "`{}` was not run: {reason}, and approvals are off for this thread (approval policy `never`)",
                req.tool
            ),
            rules,
        },
        ApprovalPolicy::Reject(cfg)
            if cfg.rules && matches!(source, AskSource::Rules | AskSource::Confirmation) =>
        {
            Verdict::Deny {
                reason: format!(
                    "`{}` was not run: {reason}, and the approval policy rejects such prompts",
                    req.tool
                ),
                rules,
            }
        }
        _ => Verdict::Ask {
            reason,
            rules,
            timeout_ms: confirmation.default_timeout_ms,
            on_timeout: confirmation.timeout_action,
        },
    }
}

fn quote_rules(rules: &[String], none: &str) -> String {
    if rules.is_empty() {
        none.to_owned()
    } else {
        rules
            .iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The approval item's data for a call that [`decide`] said to ask about;
/// `None` for any other verdict.
pub fn approval_request(
    call_id: &str,
    req: &ToolRequest<'_>,
    verdict: &Verdict,
) -> Option<ApprovalRequest> {
    let Verdict::Ask {
        reason,
        rules,
        timeout_ms,
        on_timeout,
    } = verdict
    else {
        return None;
    };
    let arg = |name: &str| req.args.get(name).and_then(Value::as_str);
    let cwd = match (req.tool, arg("workdir")) {
        ("shell", Some(dir)) => normalize(req.workspace, Path::new(dir)),
        _ => req.workspace.to_path_buf(),
    };
    Some(ApprovalRequest {
        call_id: call_id.to_owned(),
        tool: req.tool.to_owned(),
        lane: lane_of(req.tool),
        command: (req.tool == "shell")
            .then(|| arg("command").map(str::to_owned))
            .flatten(),
        cwd: cwd.to_string_lossy().into_owned(),
        arguments: req.args.clone(),
        reason: reason.clone(),
        matched_rules: rules.clone(),
        available_decisions: ApprovalDecisionKind::ALL.to_vec(),
        timeout_ms: *timeout_ms,
        on_timeout: *on_timeout,
    })
}

/// What the engine does once a human (or the timeout) answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Run the call.
    Run,
    /// Do not run it; tell the model this.
    Refuse {
        /// For the model.
        reason: String,
    },
    /// Do not run it and end the turn.
    Abort,
}

/// Applies a human's answer: remembers an "approve for this session" in
/// `grants` and says what to do with the call.
pub fn resolve(
    grants: &mut SessionGrants,
    req: &ToolRequest<'_>,
    decision: &ApprovalDecision,
) -> Resolution {
    match decision {
        ApprovalDecision::Approve => Resolution::Run,
        ApprovalDecision::ApproveForSession => {
            grants.insert(req);
            Resolution::Run
        }
        ApprovalDecision::Deny { reason } => Resolution::Refuse {
            reason: match reason {
                Some(r) if !r.trim().is_empty() => {
                    format!("`{}` was not run: the user denied it: {r}", req.tool)
                }
                _ => format!("`{}` was not run: the user denied it", req.tool),
            },
        },
        ApprovalDecision::Abort => Resolution::Abort,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req<'a>(tool: &'a str, args: &'a Value) -> ToolRequest<'a> {
        ToolRequest {
            tool,
            args,
            workspace: Path::new("/ws"),
        }
    }

    #[test]
    fn default_policy_allows_everything() {
        let p = ThreadPolicy::default();
        let g = SessionGrants::default();
        for (tool, args) in [
            ("shell", json!({"command": "rm -rf / ; $X"})),
            ("write_file", json!({"path": "/etc/passwd", "content": ""})),
            ("mcp__s__t", json!({})),
        ] {
            assert_eq!(decide(&p, &g, &req(tool, &args)), Verdict::Allow);
        }
    }

    #[test]
    fn grants_key_ignores_order_and_timeout() {
        let mut g = SessionGrants::default();
        let a = json!({"command": "cargo test", "timeout_ms": 5});
        let b = json!({"timeout_ms": 9, "command": "cargo test"});
        g.insert(&req("shell", &a));
        assert!(g.contains(&req("shell", &b)));
        assert!(!g.contains(&req("shell", &json!({"command": "cargo test -q"}))));
        let x = json!({"path": "a", "content": "1"});
        let y = json!({"content": "1", "path": "a"});
        g.insert(&req("write_file", &x));
        assert!(g.contains(&req("write_file", &y)));
    }

    #[test]
    fn canonical_json_sorts_nested_keys() {
        assert_eq!(
            canonical_json(&json!({"b": [{"d": 1, "c": 2}], "a": "x"})),
            r#"{"a":"x","b":[{"c":2,"d":1}]}"#
        );
    }
}

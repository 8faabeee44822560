//! The one decision per tool call: permission rules, session grants, the
//! approval policy and the confirmation policy folded into a [`Verdict`].
//! The precedence is documented on the crate root.

use gantry_types::{ApprovalPolicy, Lane, RuleDecision, ThreadPolicy, TimeoutAction};

use crate::check::evaluate;
use crate::grants::SessionGrants;
use crate::request::{THREAD_STATE_TOOLS, ToolRequest, is_known_safe, lane_of};

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

/// Whether the engine should ask to re-run a failed (sandboxed) command
/// without the sandbox: the `on-failure` approval policy.
pub fn asks_on_failure(policy: &ThreadPolicy) -> bool {
    matches!(policy.approval, ApprovalPolicy::OnFailure)
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

/// The decision for one tool call. Precedence (see the crate doc):
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

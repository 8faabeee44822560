//! Helpers every module shares: a rule set, a request in a fixed
//! workspace, and the decision or rule check on it.

use std::path::Path;

use gantry_policy::{SessionGrants, ToolRequest, Verdict, check_permission, decide};
use gantry_types::{PermissionRules, RuleDecision, ThreadPolicy};
use serde_json::{Value, json};

/// The workspace every request runs in.
pub(crate) const WS: &str = "/work/repo";

/// An enabled rule set.
pub(crate) fn rules(
    allow: &[&str],
    ask: &[&str],
    deny: &[&str],
    default: RuleDecision,
) -> PermissionRules {
    let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    PermissionRules {
        enabled: true,
        allow: own(allow),
        ask: own(ask),
        deny: own(deny),
        default,
    }
}

/// A request for `tool` in [`WS`].
pub(crate) fn req<'a>(tool: &'a str, args: &'a Value) -> ToolRequest<'a> {
    ToolRequest {
        tool,
        args,
        workspace: Path::new(WS),
    }
}

/// What the rules say about one call.
pub(crate) fn check(r: &PermissionRules, tool: &str, args: Value) -> (RuleDecision, Vec<String>) {
    check_permission(r, &req(tool, &args))
}

/// What the rules say about a shell command line.
pub(crate) fn sh(r: &PermissionRules, command: &str) -> RuleDecision {
    check(r, "shell", json!({ "command": command })).0
}

/// The decision on one call.
pub(crate) fn decide_on(
    policy: &ThreadPolicy,
    grants: &SessionGrants,
    tool: &str,
    args: Value,
) -> Verdict {
    decide(policy, grants, &req(tool, &args))
}

/// The decision on a shell command line, with no session grants.
pub(crate) fn shell_verdict(policy: &ThreadPolicy, command: &str) -> Verdict {
    decide_on(
        policy,
        &SessionGrants::default(),
        "shell",
        json!({ "command": command }),
    )
}

/// Whether the verdict asks a human.
pub(crate) fn is_ask(v: &Verdict) -> bool {
    matches!(v, Verdict::Ask { .. })
}

/// Whether the verdict denies.
pub(crate) fn is_deny(v: &Verdict) -> bool {
    matches!(v, Verdict::Deny { .. })
}

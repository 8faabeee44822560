//! What a thread's tool calls may do without asking a human: permission
//! rules, the approval policy, the confirmation policy, and the answers a
//! human can give. Pure data; the decision itself lives in
//! `gantry_policy`.
//!
//! Every type's `Default` means "as Gantry behaves without a policy": rules
//! disabled, approval `never`, confirmation disabled. So
//! [`ThreadPolicy::default()`] allows every tool call and asks nobody, which
//! is what a thread did before policies existed; a client opts in to asking.

use serde::{Deserialize, Serialize};

use crate::{SandboxMode, UserInputPolicy};

/// What a permission rule (or the rule set's default) says about a call.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum RuleDecision {
    /// Run without asking. The weakest, so the derive orders it first.
    #[default]
    Allow,
    /// Ask a human first.
    Ask,
    /// Refuse; the model is told why.
    Deny,
}

impl RuleDecision {
    /// The stricter of two decisions (deny > ask > allow).
    pub fn stricter(self, other: RuleDecision) -> RuleDecision {
        self.max(other)
    }
}

/// Allow/ask/deny rule lists (seed 001 `PermissionPolicy`).
///
/// A rule is `Tool` or `Tool(specifier)`: `Bash`, `Bash(cargo:*)` (command
/// prefix), `Bash(npm run test *)` (glob), `Read(src/**/*.rs)`,
/// `Write(...)`, `Edit(...)`, `Grep`, `Glob`, `LS`, `mcp__server__tool`,
/// `mcp__server__*`. Deny wins over ask, ask over allow; a call no rule
/// matches gets `default`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PermissionRules {
    /// Whether the rules apply at all. Off by default: every call is allowed.
    pub enabled: bool,
    /// Rules that allow without asking.
    pub allow: Vec<String>,
    /// Rules that ask a human.
    pub ask: Vec<String>,
    /// Rules that refuse (highest priority).
    pub deny: Vec<String>,
    /// The decision for a call no rule matches. `allow`, so that enabling
    /// the rules with only a deny list changes nothing but what it denies.
    pub default: RuleDecision,
}

impl PermissionRules {
    /// Rules under which no call runs but those that touch only the
    /// thread's own state (its task list, memories, skills): on, refusing
    /// by default, allowing and asking nothing.
    pub fn allow_nothing() -> Self {
        PermissionRules {
            enabled: true,
            default: RuleDecision::Deny,
            ..PermissionRules::default()
        }
    }
}

/// Which prompts an [`ApprovalPolicy::Reject`] policy refuses on its own
/// instead of asking a human (codex `RejectConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RejectConfig {
    /// Refuse prompts that would let a command leave the sandbox.
    pub sandbox_approval: bool,
    /// Refuse prompts raised by permission rules (`ask` rules, confirmation).
    pub rules: bool,
    /// Refuse questions MCP servers put to the user.
    pub mcp_elicitations: bool,
}

/// When the human is asked before a command runs (codex `AskForApproval`).
///
/// Serialized kebab-case, as codex does: `"never"`, `"on-request"`,
/// `"on-failure"`, `"untrusted"`, `{"reject": {"rules": true, ...}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Never ask: anything that would need approval is refused and the model
    /// is told so. The default, because today nothing is ever asked.
    #[default]
    Never,
    /// Run unless a rule says ask or deny; the model may request approval.
    OnRequest,
    /// Run everything (sandboxed); ask only to re-run a command that failed.
    OnFailure,
    /// Only known-safe read-only commands run without asking.
    Untrusted,
    /// Like `on-request`, but the listed kinds of prompt are refused
    /// automatically instead of asked.
    Reject(RejectConfig),
}

/// What happens to a confirmation nobody answered in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeoutAction {
    /// Refuse the call (the safe default).
    #[default]
    Reject,
    /// Run the call.
    AutoApprove,
}

/// The lane a tool call belongs to (seed 001 `SessionLane`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Pause, resume, cancel.
    Control,
    /// Read-only tools: read, glob, ls, grep.
    Query,
    /// Tools with effects: shell, write, edit, and anything unknown.
    Execute,
    /// Model calls.
    Generate,
}

/// Human-in-the-loop confirmation (seed 001 `ConfirmationPolicy`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConfirmationPolicy {
    /// Whether the lists below apply. Off by default.
    pub enabled: bool,
    /// Tools that never need confirmation (`shell` or `Bash`, `read_file` or
    /// `Read`, ..., `mcp__server__tool`).
    pub auto_approve_tools: Vec<String>,
    /// Tools that always need confirmation.
    pub require_confirm_tools: Vec<String>,
    /// How long a confirmation waits for an answer.
    pub default_timeout_ms: u64,
    /// What an unanswered confirmation turns into.
    pub timeout_action: TimeoutAction,
    /// Lanes whose calls never need confirmation ("yolo").
    pub yolo_lanes: Vec<Lane>,
}

/// The seed's default confirmation timeout: 30 s.
pub const DEFAULT_CONFIRMATION_TIMEOUT_MS: u64 = 30_000;

impl Default for ConfirmationPolicy {
    fn default() -> Self {
        Self {
            enabled: false,
            auto_approve_tools: Vec::new(),
            require_confirm_tools: Vec::new(),
            default_timeout_ms: DEFAULT_CONFIRMATION_TIMEOUT_MS,
            timeout_action: TimeoutAction::Reject,
            yolo_lanes: Vec::new(),
        }
    }
}

/// Everything that decides what a thread's tool calls may do.
///
/// The default allows everything without asking (rules disabled, approval
/// `never`, confirmation disabled), exactly as Gantry behaved before.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ThreadPolicy {
    /// Allow/ask/deny rules.
    pub permissions: PermissionRules,
    /// When to ask before running commands.
    pub approval: ApprovalPolicy,
    /// Human-in-the-loop confirmation lists and timeouts.
    pub confirmation: ConfirmationPolicy,
    /// The OS sandbox for shell commands.
    pub sandbox: SandboxMode,
    /// Whether the model may ask the user questions, and how long it waits.
    #[serde(skip_serializing_if = "UserInputPolicy::is_default")]
    pub user_input: UserInputPolicy,
}

/// A human's answer to an approval request.
///
/// Serialized snake_case, externally tagged: `"approve"`,
/// `"approve_for_session"`, `{"deny": {"reason": "..."}}`, `"abort"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this call.
    Approve,
    /// Run this call and identical ones for the rest of the session.
    ApproveForSession,
    /// Do not run it; the reason, if any, is given back to the model.
    Deny {
        /// Why, in the human's words.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Do not run it and end the turn.
    Abort,
}

impl ApprovalDecision {
    /// The decision's kind, without its data.
    pub fn kind(&self) -> ApprovalDecisionKind {
        match self {
            ApprovalDecision::Approve => ApprovalDecisionKind::Approve,
            ApprovalDecision::ApproveForSession => ApprovalDecisionKind::ApproveForSession,
            ApprovalDecision::Deny { .. } => ApprovalDecisionKind::Deny,
            ApprovalDecision::Abort => ApprovalDecisionKind::Abort,
        }
    }

    /// Whether the call runs.
    pub fn runs(&self) -> bool {
        matches!(
            self,
            ApprovalDecision::Approve | ApprovalDecision::ApproveForSession
        )
    }
}

/// The kinds of [`ApprovalDecision`], for telling a client which it may give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecisionKind {
    /// [`ApprovalDecision::Approve`].
    Approve,
    /// [`ApprovalDecision::ApproveForSession`].
    ApproveForSession,
    /// [`ApprovalDecision::Deny`].
    Deny,
    /// [`ApprovalDecision::Abort`].
    Abort,
}

impl ApprovalDecisionKind {
    /// Every kind, in the order a client would offer them.
    pub const ALL: [ApprovalDecisionKind; 4] = [
        ApprovalDecisionKind::Approve,
        ApprovalDecisionKind::ApproveForSession,
        ApprovalDecisionKind::Deny,
        ApprovalDecisionKind::Abort,
    ];
}

/// What a client is shown when a tool call needs a human's approval; the
/// engine puts it in an approval item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The provider's id for the tool call.
    pub call_id: String,
    /// The Gantry tool name (`shell`, `write_file`, `mcp__server__tool`).
    pub tool: String,
    /// The call's lane.
    pub lane: Lane,
    /// The command line, for shell calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The directory the call runs in.
    pub cwd: String,
    /// The tool call's arguments as JSON.
    #[serde(default)]
    pub arguments: serde_json::Value,
    /// Why approval is needed.
    pub reason: String,
    /// The permission rules that matched, for display.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched_rules: Vec<String>,
    /// The answers the client may give.
    pub available_decisions: Vec<ApprovalDecisionKind>,
    /// How long the request waits for an answer.
    pub timeout_ms: u64,
    /// What an unanswered request turns into.
    pub on_timeout: TimeoutAction,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn approval_policy_parses_plain_and_reject_forms() {
        let p: ApprovalPolicy = serde_json::from_value(json!("never")).unwrap();
        assert_eq!(p, ApprovalPolicy::Never);
        let p: ApprovalPolicy = serde_json::from_value(json!("on-request")).unwrap();
        assert_eq!(p, ApprovalPolicy::OnRequest);
        let p: ApprovalPolicy = serde_json::from_value(json!("untrusted")).unwrap();
        assert_eq!(p, ApprovalPolicy::Untrusted);
        let p: ApprovalPolicy = serde_json::from_value(json!({"reject": {"rules": true}})).unwrap();
        assert_eq!(
            p,
            ApprovalPolicy::Reject(RejectConfig {
                rules: true,
                ..RejectConfig::default()
            })
        );
        assert_eq!(
            serde_json::to_value(ApprovalPolicy::OnFailure).unwrap(),
            json!("on-failure")
        );
    }

    #[test]
    fn defaults_mean_as_today() {
        let p = ThreadPolicy::default();
        assert!(!p.permissions.enabled);
        assert_eq!(p.approval, ApprovalPolicy::Never);
        assert!(!p.confirmation.enabled);
        assert_eq!(p.confirmation.default_timeout_ms, 30_000);
        assert_eq!(p.confirmation.timeout_action, TimeoutAction::Reject);
        // An empty object is the default too.
        let parsed: ThreadPolicy = serde_json::from_value(json!({})).unwrap();
        assert_eq!(parsed, p);
    }

    #[test]
    fn confirmation_policy_wire_names() {
        let c: ConfirmationPolicy = serde_json::from_value(json!({
            "enabled": true,
            "timeout_action": "auto-approve",
            "yolo_lanes": ["query", "execute"],
        }))
        .unwrap();
        assert_eq!(c.timeout_action, TimeoutAction::AutoApprove);
        assert_eq!(c.yolo_lanes, vec![Lane::Query, Lane::Execute]);
        assert_eq!(c.default_timeout_ms, 30_000);
    }

    #[test]
    fn approval_decision_wire_names() {
        let d: ApprovalDecision = serde_json::from_value(json!("approve_for_session")).unwrap();
        assert_eq!(d, ApprovalDecision::ApproveForSession);
        let d: ApprovalDecision =
            serde_json::from_value(json!({"deny": {"reason": "no network"}})).unwrap();
        assert_eq!(
            d,
            ApprovalDecision::Deny {
                reason: Some("no network".into())
            }
        );
        assert!(!d.runs());
        assert_eq!(d.kind(), ApprovalDecisionKind::Deny);
    }

    #[test]
    fn rule_decision_order_is_strictness() {
        assert_eq!(
            RuleDecision::Allow.stricter(RuleDecision::Ask),
            RuleDecision::Ask
        );
        assert_eq!(
            RuleDecision::Deny.stricter(RuleDecision::Ask),
            RuleDecision::Deny
        );
    }
}

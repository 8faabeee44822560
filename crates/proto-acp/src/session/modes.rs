//! The session modes, each one of Gantry's approval setups: `ask` (the
//! default: commands, edits and MCP tools ask first), `accept-edits` (file
//! edits run, commands ask), `full-auto` (nothing asks) and `read-only`
//! (the OS sandbox and the file tools refuse writes; nothing asks).
//! Reading and searching never ask.

use gantry_types::{
    ApprovalPolicy, ConfirmationPolicy, Lane, SandboxMode, ThreadPolicy, TimeoutAction,
};

use crate::wire::{SessionMode, SessionModeState};

/// How long a permission request waits for the user: an editor's prompt
/// may sit unanswered while its user is away.
pub(crate) const ASK_TIMEOUT_MS: u64 = 60 * 60 * 1000;

/// A session mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Ask,
    AcceptEdits,
    FullAuto,
    ReadOnly,
}

const ALL: [Mode; 4] = [Mode::Ask, Mode::AcceptEdits, Mode::FullAuto, Mode::ReadOnly];

impl Mode {
    pub(crate) fn id(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::AcceptEdits => "accept-edits",
            Mode::FullAuto => "full-auto",
            Mode::ReadOnly => "read-only",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Ask => "Ask",
            Mode::AcceptEdits => "Accept edits",
            Mode::FullAuto => "Full auto",
            Mode::ReadOnly => "Read only",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Mode::Ask => "Commands, file edits and MCP tools ask for permission first",
            Mode::AcceptEdits => "File edits run at once; commands and MCP tools ask first",
            Mode::FullAuto => "Everything runs without asking (in the sandbox)",
            Mode::ReadOnly => "Nothing is changed: writes are refused, nothing asks",
        }
    }

    /// The mode named `id`.
    pub(crate) fn parse(id: &str) -> Option<Self> {
        ALL.into_iter().find(|m| m.id() == id)
    }

    /// The policy of this mode for a thread whose sandbox (outside
    /// `read-only`) is `sandbox`; the permission rules and the setting for
    /// questions to the user are kept.
    pub(crate) fn policy(self, base: &ThreadPolicy, sandbox: SandboxMode) -> ThreadPolicy {
        let asks = |auto: &[&str]| ConfirmationPolicy {
            enabled: true,
            auto_approve_tools: auto.iter().map(|t| (*t).to_owned()).collect(),
            require_confirm_tools: Vec::new(),
            default_timeout_ms: ASK_TIMEOUT_MS,
            timeout_action: TimeoutAction::Reject,
            yolo_lanes: vec![Lane::Query],
        };
        let (approval, confirmation, sandbox) = match self {
            Mode::Ask => (ApprovalPolicy::OnRequest, asks(&[]), sandbox),
            Mode::AcceptEdits => (
                ApprovalPolicy::OnRequest,
                asks(&["write_file", "edit_file"]),
                sandbox,
            ),
            Mode::FullAuto => (
                ApprovalPolicy::Never,
                ConfirmationPolicy::default(),
                sandbox,
            ),
            Mode::ReadOnly => (
                ApprovalPolicy::Never,
                ConfirmationPolicy::default(),
                SandboxMode::ReadOnly,
            ),
        };
        ThreadPolicy {
            permissions: base.permissions.clone(),
            approval,
            confirmation,
            sandbox,
            user_input: base.user_input,
        }
    }

    /// The mode a stored policy stands for (a thread made elsewhere is
    /// `full-auto` unless it asks).
    pub(crate) fn of(policy: &ThreadPolicy) -> Self {
        if policy.sandbox == SandboxMode::ReadOnly {
            return Mode::ReadOnly;
        }
        if !policy.confirmation.enabled {
            return Mode::FullAuto;
        }
        let auto = &policy.confirmation.auto_approve_tools;
        if auto.iter().any(|t| t == "edit_file") {
            Mode::AcceptEdits
        } else {
            Mode::Ask
        }
    }

    /// The mode state with this mode current.
    pub(crate) fn state(self) -> SessionModeState {
        SessionModeState {
            current_mode_id: self.id().to_owned(),
            available_modes: ALL
                .into_iter()
                .map(|m| SessionMode {
                    id: m.id().to_owned(),
                    name: m.name().to_owned(),
                    description: m.description().to_owned(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_reads_back_from_its_policy() {
        for mode in ALL {
            let policy = mode.policy(&ThreadPolicy::default(), SandboxMode::WorkspaceWrite);
            assert_eq!(Mode::of(&policy), mode, "{}", mode.id());
            assert_eq!(Mode::parse(mode.id()), Some(mode));
        }
        assert_eq!(Mode::parse("yolo"), None);
    }
}

//! How much of the machine a thread's commands may touch.

use serde::{Deserialize, Serialize};

/// The OS sandbox applied to shell commands. Ordered from the strictest to
/// the loosest, so a ceiling is a `<=`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Read anything, write nothing, no network.
    ReadOnly,
    /// Read anything, write only inside the workspace and the temp dir, no
    /// network unless allowed.
    #[default]
    WorkspaceWrite,
    /// No sandbox.
    DangerFullAccess,
}

impl SandboxMode {
    /// The kebab-case name (`read-only`, `workspace-write`, `danger-full-access`).
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::DangerFullAccess => "danger-full-access",
        }
    }
}

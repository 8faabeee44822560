//! After a human (or the timeout) answered: the approval a client shows,
//! and what the answer means for the call.

use std::path::Path;

use gantry_types::{ApprovalDecision, ApprovalDecisionKind, ApprovalRequest};

use crate::decide::Verdict;
use crate::grants::SessionGrants;
use crate::request::{ToolRequest, lane_of};
use crate::rules::normalize;

/// The approval item's data for a call that [`decide`](fn@crate::decide) said to ask about;
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
    let cwd = match (req.tool, req.arg("workdir")) {
        ("shell", Some(dir)) => normalize(req.workspace, Path::new(dir)),
        _ => req.workspace.to_path_buf(),
    };
    Some(ApprovalRequest {
        call_id: call_id.to_owned(),
        tool: req.tool.to_owned(),
        lane: lane_of(req.tool),
        command: (req.tool == "shell")
            .then(|| req.arg("command").map(str::to_owned))
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

//! An approval the engine asks for, as `session/request_permission`: the
//! options are the answers the approval allows (`allow_once`,
//! `allow_always` = for the session, `reject_once`, `reject_always` = a
//! deny rule for this call from now on); a cancelled prompt aborts the
//! call (and the turn).

use std::sync::Arc;

use gantry_types::{ApprovalDecision, ApprovalDecisionKind, ApprovalRequest};

use super::{Agent, Session};
use crate::wire::{
    PermissionOption, PermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    ToolCallUpdate,
};

const ALLOW: &str = "allow";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT: &str = "reject";
const REJECT_ALWAYS: &str = "reject_always";

/// The options offered for an approval that allows `decisions`.
pub(crate) fn options(decisions: &[ApprovalDecisionKind]) -> Vec<PermissionOption> {
    let option = |id: &str, name: &str, kind| PermissionOption {
        option_id: id.to_owned(),
        name: name.to_owned(),
        kind,
    };
    let mut out = Vec::new();
    for kind in decisions {
        match kind {
            ApprovalDecisionKind::Approve => out.push(option(ALLOW, "Allow", "allow_once")),
            ApprovalDecisionKind::ApproveForSession => out.push(option(
                ALLOW_ALWAYS,
                "Allow for this session",
                "allow_always",
            )),
            ApprovalDecisionKind::Deny => {
                out.push(option(REJECT, "Reject", "reject_once"));
                out.push(option(REJECT_ALWAYS, "Always reject", "reject_always"));
            }
            // A cancelled prompt aborts; no option of its own.
            ApprovalDecisionKind::Abort => {}
        }
    }
    out
}

/// Asks the user about `approval_id` and gives the engine the answer.
pub(crate) async fn ask(
    agent: Arc<Agent>,
    session: Arc<Session>,
    approval_id: String,
    request: ApprovalRequest,
    tool_call: ToolCallUpdate,
) {
    let params = RequestPermissionRequest {
        session_id: session.id.0.clone(),
        tool_call,
        options: options(&request.available_decisions),
    };
    let answer: Result<RequestPermissionResponse, _> = agent
        .peer
        .request("session/request_permission", params)
        .await;
    let decision = match answer.map(|a| a.outcome) {
        Ok(PermissionOutcome::Selected { option_id }) => match option_id.as_str() {
            ALLOW => ApprovalDecision::Approve,
            ALLOW_ALWAYS => ApprovalDecision::ApproveForSession,
            REJECT => ApprovalDecision::Deny {
                reason: Some("the user rejected it".to_owned()),
            },
            REJECT_ALWAYS => {
                deny_from_now_on(&agent, &session, &request).await;
                ApprovalDecision::Deny {
                    reason: Some("the user rejected it, and calls like it from now on".to_owned()),
                }
            }
            other => {
                tracing::warn!(
                    option = other,
                    "the client chose no option offered; rejecting"
                );
                ApprovalDecision::Deny {
                    reason: Some("the user's answer was not understood".to_owned()),
                }
            }
        },
        Ok(PermissionOutcome::Cancelled) => ApprovalDecision::Abort,
        Err(e) => {
            tracing::warn!(error = %e, "permission request failed; aborting the call");
            ApprovalDecision::Abort
        }
    };
    // A cancel or a timeout may have answered it first: that answer stands.
    if let Err(e) = agent
        .engine
        .safety()
        .resolve_approval(&session.id, &approval_id, decision)
        .await
    {
        tracing::debug!(error = %e, approval_id, "approval already resolved");
    }
}

/// Adds a deny rule for calls like this one to the thread's policy.
async fn deny_from_now_on(agent: &Agent, session: &Session, request: &ApprovalRequest) {
    let rule = match &request.command {
        Some(command) if request.tool == "shell" => format!("shell({command})"),
        _ => request.tool.clone(),
    };
    let Ok(view) = agent.engine.threads().read(&session.id).await else {
        return;
    };
    let mut policy = view.thread.policy.clone();
    policy.permissions.enabled = true;
    if !policy.permissions.deny.contains(&rule) {
        policy.permissions.deny.push(rule);
    }
    if let Err(e) = agent.engine.safety().set_policy(&session.id, policy).await {
        tracing::warn!(error = %e, "cannot remember a rejection");
    }
}

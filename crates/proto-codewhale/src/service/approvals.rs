//! Answers to approval requests: an `ApprovalDecisionRequest` naming a
//! `ReviewDecision` resolves the approval the frame announced. The
//! approval is looked up in the projection first, so a client learns that
//! it is not there (`missing`) or already answered, apart from failures.

use gantry_core::projection::approvals;
use gantry_types::{ApprovalDecision, ThreadId};
use serde_json::json;

use super::{CodeWhale, ServiceError};
use crate::wire::{ApprovalDecisionRequest, ThreadResponse};

/// The Gantry decision of a CodeWhale one. There is no execution policy or
/// per-host network policy to amend: the amendments approve for the
/// session (what an amendment lets through again), a network amendment
/// approves this call.
pub(crate) fn decision(req: &ApprovalDecisionRequest) -> Result<ApprovalDecision, ServiceError> {
    let name = req.decision.trim();
    // The name alone, or a whole `ReviewDecision` as JSON (`{"type": ...}`).
    let name = if name.starts_with('{') {
        serde_json::from_str::<serde_json::Value>(name)
            .ok()
            .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
            .unwrap_or_default()
    } else {
        name.to_owned()
    };
    Ok(match name.as_str() {
        "approved" if req.remember => ApprovalDecision::ApproveForSession,
        "approved" | "network_policy_amendment" => ApprovalDecision::Approve,
        "approved_for_session" | "approved_execpolicy_amendment" => {
            ApprovalDecision::ApproveForSession
        }
        "denied" => ApprovalDecision::Deny { reason: None },
        "abort" => ApprovalDecision::Abort,
        other => {
            return Err(ServiceError::Invalid(format!(
                "decision `{other}`: expected approved, approved_for_session, \
                 approved_execpolicy_amendment, network_policy_amendment, denied or abort"
            )));
        }
    })
}

impl CodeWhale {
    /// Resolves approval `approval_id` of `thread_id` with `req`.
    pub async fn approve(
        &self,
        thread_id: &str,
        approval_id: &str,
        req: &ApprovalDecisionRequest,
    ) -> Result<ThreadResponse, ServiceError> {
        let decision = decision(req)?;
        let Some(view) = self.view(thread_id).await? else {
            return Ok(ThreadResponse::missing(thread_id));
        };
        let Some(asked) = approvals(&view).find(|a| a.approval_id == approval_id) else {
            let mut response = ThreadResponse::bare(thread_id, "missing");
            response.data = json!({ "error": "approval not found" });
            return Ok(response);
        };
        if asked.answer.is_some() {
            return Err(ServiceError::Invalid(format!(
                "approval `{approval_id}` was answered already"
            )));
        }
        let id = ThreadId(thread_id.to_owned());
        self.engine()
            .safety()
            .resolve_approval(&id, approval_id, decision.clone())
            .await?;
        let mut response = ThreadResponse::bare(thread_id, "ok");
        response.data = json!({ "approval_id": approval_id, "decision": decision });
        Ok(response)
    }

    /// Interrupts `thread_id`'s running turn: `ok` with the turn
    /// interrupted (`null` when none ran), `missing` without the thread.
    pub async fn interrupt(&self, thread_id: &str) -> Result<ThreadResponse, ServiceError> {
        if self.view(thread_id).await?.is_none() {
            return Ok(ThreadResponse::missing(thread_id));
        }
        let id = ThreadId(thread_id.to_owned());
        let turn = self.engine().turns().interrupt(&id).await?;
        let mut response = ThreadResponse::bare(thread_id, "ok");
        response.data = json!({ "interrupted": turn.map(|t| t.0) });
        Ok(response)
    }
}

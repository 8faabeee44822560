//! The approvals a thread asked for, newest first, each pending or answered.

use gantry_types::{
    ApprovalDecision, ApprovalRequest, ItemKind, ItemStatus, ResolvedBy, ThreadView,
};

/// One approval a thread asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval<'a> {
    /// The id to answer it with.
    pub approval_id: &'a str,
    /// What was asked (with the call's id).
    pub request: &'a ApprovalRequest,
    /// `None` while it waits for an answer.
    pub answer: Option<Answer<'a>>,
}

/// How an approval was answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer<'a> {
    /// The decision, when recorded.
    pub decision: Option<&'a ApprovalDecision>,
    /// Who gave it, when recorded.
    pub by: Option<ResolvedBy>,
}

/// Every approval of `view`, newest first.
pub fn approvals(view: &ThreadView) -> impl Iterator<Item = Approval<'_>> {
    let items = view.turns.iter().rev().flat_map(|t| t.items.iter().rev());
    items.filter_map(|item| {
        let ItemKind::Approval {
            approval_id,
            request,
            decision,
            resolved_by,
        } = &item.kind
        else {
            return None;
        };
        let answer = (item.status != ItemStatus::InProgress).then_some(Answer {
            decision: decision.as_ref(),
            by: *resolved_by,
        });
        Some(Approval {
            approval_id,
            request,
            answer,
        })
    })
}

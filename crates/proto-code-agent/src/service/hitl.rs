//! Human in the loop: tool confirmations and the confirmation policy.
//!
//! A tool call the session's policy asks about waits in an approval: the
//! client sees `CONFIRMATION_REQUIRED` on `SubscribeEvents` (or a
//! `confirmation_required` metadata chunk of `StreamGenerate`) and answers
//! with `ConfirmToolExecution`; unanswered, the policy's timeout action
//! decides.
//!
//! An unknown confirmation is `success: false` with the reason in `error`,
//! as A3S answers; one already answered is `FAILED_PRECONDITION`.

use gantry_core::{EngineError, projection};
use gantry_grpc::clip;
use gantry_types::{
    ApprovalDecision, ApprovalPolicy, ConfirmationPolicy, DEFAULT_CONFIRMATION_TIMEOUT_MS,
    RuleDecision, ThreadPolicy, ThreadView, TimeoutAction,
};
use tonic::Status;

use super::Ctx;
use super::lanes::{lane, pb_lane};
use crate::pb;
use crate::status::{required, session_id, status};

/// `ConfirmToolExecution`: answers a pending confirmation. `tool_id` is the
/// approval's id (`tool_id` of `CONFIRMATION_REQUIRED`) or the model's call
/// id (its `call_id`). Approved, the call runs; denied, the model is told
/// it was denied, with `reason` when given.
pub(crate) async fn confirm_tool_execution(
    ctx: &Ctx,
    req: pb::ConfirmToolExecutionRequest,
) -> Result<pb::ConfirmToolExecutionResponse, Status> {
    let id = session_id(&req.session_id)?;
    let wanted = required("tool_id", &req.tool_id)?;
    let view = ctx.live_session(&id).await?;
    let approval_id = match pending_approval(&view, wanted) {
        Ok(approval_id) => approval_id,
        Err(e) if e.code() == tonic::Code::NotFound => {
            return Ok(pb::ConfirmToolExecutionResponse {
                success: false,
                error: e.message().to_owned(),
            });
        }
        Err(e) => return Err(e),
    };
    let decision = if req.approved {
        ApprovalDecision::Approve
    } else {
        ApprovalDecision::Deny {
            reason: req.reason.filter(|r| !r.trim().is_empty()),
        }
    };
    ctx.engine
        .safety()
        .resolve_approval(&id, &approval_id, decision)
        .await
        .map_err(|e| match e {
            // Answered (or timed out) between the lookup and the answer.
            EngineError::InvalidInput(_) => already_answered(wanted, None),
            other => status(other),
        })?;
    Ok(pb::ConfirmToolExecutionResponse {
        success: true,
        error: String::new(),
    })
}

/// `SetConfirmationPolicy`: replaces the session's confirmation policy
/// (from its next tool call on, also inside a running turn). A
/// `default_timeout_ms` of 0 is the default (30 s); an unset
/// `timeout_action` is `reject`.
pub(crate) async fn set_confirmation_policy(
    ctx: &Ctx,
    req: pb::SetConfirmationPolicyRequest,
) -> Result<pb::SetConfirmationPolicyResponse, Status> {
    let id = session_id(&req.session_id)?;
    let wire = req
        .policy
        .ok_or_else(|| Status::invalid_argument("policy: required"))?;
    let confirmation = confirmation(&wire)?;
    let stored = change_policy(ctx, &id, |p| p.confirmation = confirmation).await?;
    Ok(pb::SetConfirmationPolicyResponse {
        success: true,
        policy: Some(pb_confirmation(&stored.confirmation)),
    })
}

/// `GetConfirmationPolicy`: the session's confirmation policy.
pub(crate) async fn get_confirmation_policy(
    ctx: &Ctx,
    req: pb::GetConfirmationPolicyRequest,
) -> Result<pb::GetConfirmationPolicyResponse, Status> {
    let id = session_id(&req.session_id)?;
    let view = ctx.engine.threads().read(&id).await.map_err(status)?;
    Ok(pb::GetConfirmationPolicyResponse {
        policy: Some(pb_confirmation(&view.thread.policy.confirmation)),
    })
}

/// The policy, made to ask the client where it says to ask. Gantry's
/// default approval policy `never` turns every "ask" into a denial (no one
/// to ask); an A3S client that turns confirmation on, or writes ask rules,
/// is that someone (`ConfirmToolExecution`), so `never` becomes
/// `on-request`. Any other approval policy is kept.
/// Changes a live session's policy (kept answerable over this service) and
/// returns it as stored.
pub(super) async fn change_policy(
    ctx: &Ctx,
    id: &gantry_types::ThreadId,
    change: impl FnOnce(&mut ThreadPolicy),
) -> Result<ThreadPolicy, Status> {
    let mut policy = ctx.live_session(id).await?.thread.policy.clone();
    change(&mut policy);
    ctx.engine
        .safety()
        .set_policy(id, answerable(policy))
        .await
        .map_err(status)?;
    Ok(ctx
        .engine
        .threads()
        .read(id)
        .await
        .map_err(status)?
        .thread
        .policy
        .clone())
}

pub(super) fn answerable(mut policy: ThreadPolicy) -> ThreadPolicy {
    let rules = &policy.permissions;
    let rules_ask = rules.enabled && (!rules.ask.is_empty() || rules.default == RuleDecision::Ask);
    if policy.approval == ApprovalPolicy::Never && (policy.confirmation.enabled || rules_ask) {
        policy.approval = ApprovalPolicy::OnRequest;
    }
    policy
}

/// The approval id of the pending confirmation `wanted` names (its id or
/// its call's id). `NOT_FOUND` if the session never asked it,
/// `FAILED_PRECONDITION` if it was already answered.
fn pending_approval(view: &ThreadView, wanted: &str) -> Result<String, Status> {
    let mut answered: Option<Option<gantry_types::ResolvedBy>> = None;
    let asked = projection::approvals(view)
        .filter(|a| a.approval_id == wanted || a.request.call_id == wanted);
    for approval in asked {
        match approval.answer {
            None => return Ok(approval.approval_id.to_owned()),
            Some(answer) => {
                answered.get_or_insert(answer.by);
            }
        }
    }
    match answered {
        Some(by) => Err(already_answered(wanted, by)),
        None => Err(Status::not_found(format!(
            "tool_id: session {} has no confirmation `{wanted}`",
            view.thread.id,
            wanted = clip(wanted)
        ))),
    }
}

/// The status of an answer to a confirmation already resolved (`by` whom, when known).
fn already_answered(wanted: &str, by: Option<gantry_types::ResolvedBy>) -> Status {
    use gantry_types::ResolvedBy;
    let by = match by {
        Some(ResolvedBy::Client) => " by a client",
        Some(ResolvedBy::Timeout) => " by its timeout",
        Some(ResolvedBy::Interrupt) => " by an interrupt",
        None => "",
    };
    Status::failed_precondition(format!(
        "tool_id: confirmation `{wanted}` was already resolved{by}",
        wanted = clip(wanted)
    ))
}

/// The engine's confirmation policy from the wire's.
fn confirmation(wire: &pb::ConfirmationPolicy) -> Result<ConfirmationPolicy, Status> {
    let timeout_action = match pb::TimeoutAction::try_from(wire.timeout_action) {
        Ok(pb::TimeoutAction::Unknown | pb::TimeoutAction::Reject) => TimeoutAction::Reject,
        Ok(pb::TimeoutAction::AutoApprove) => TimeoutAction::AutoApprove,
        Err(_) => {
            return Err(Status::invalid_argument(format!(
                "policy.timeout_action: unknown value {}",
                wire.timeout_action
            )));
        }
    };
    let yolo_lanes = wire
        .yolo_lanes
        .iter()
        .enumerate()
        .map(|(i, &l)| lane(&format!("policy.yolo_lanes[{i}]"), l))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ConfirmationPolicy {
        enabled: wire.enabled,
        auto_approve_tools: tool_names("policy.auto_approve_tools", &wire.auto_approve_tools)?,
        require_confirm_tools: tool_names(
            "policy.require_confirm_tools",
            &wire.require_confirm_tools,
        )?,
        default_timeout_ms: match wire.default_timeout_ms {
            0 => DEFAULT_CONFIRMATION_TIMEOUT_MS,
            ms => ms,
        },
        timeout_action,
        yolo_lanes,
    })
}

/// A list of tool names, trimmed; none may be empty.
fn tool_names(field: &str, names: &[String]) -> Result<Vec<String>, Status> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| required(&format!("{field}[{i}]"), name).map(str::to_owned))
        .collect()
}

/// The wire's confirmation policy.
fn pb_confirmation(policy: &ConfirmationPolicy) -> pb::ConfirmationPolicy {
    let timeout_action = match policy.timeout_action {
        TimeoutAction::Reject => pb::TimeoutAction::Reject,
        TimeoutAction::AutoApprove => pb::TimeoutAction::AutoApprove,
    };
    pb::ConfirmationPolicy {
        enabled: policy.enabled,
        auto_approve_tools: policy.auto_approve_tools.clone(),
        require_confirm_tools: policy.require_confirm_tools.clone(),
        default_timeout_ms: policy.default_timeout_ms,
        timeout_action: timeout_action as i32,
        yolo_lanes: policy
            .yolo_lanes
            .iter()
            .map(|&l| pb_lane(l) as i32)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_types::Lane;

    #[test]
    fn the_wire_policy_maps_both_ways_with_defaults_for_unset_fields() {
        let wire = pb::ConfirmationPolicy {
            enabled: true,
            auto_approve_tools: vec![" read_file ".into()],
            require_confirm_tools: vec!["shell".into()],
            default_timeout_ms: 0,
            timeout_action: 0,
            yolo_lanes: vec![pb::SessionLane::Query as i32],
        };
        let policy = confirmation(&wire).unwrap();
        assert_eq!(policy.auto_approve_tools, ["read_file"]);
        assert_eq!(policy.default_timeout_ms, DEFAULT_CONFIRMATION_TIMEOUT_MS);
        assert_eq!(policy.timeout_action, TimeoutAction::Reject);
        assert_eq!(policy.yolo_lanes, [Lane::Query]);
        let back = pb_confirmation(&policy);
        assert_eq!(back.timeout_action, pb::TimeoutAction::Reject as i32);
        assert_eq!(back.yolo_lanes, wire.yolo_lanes);

        let bad_lane = pb::ConfirmationPolicy {
            yolo_lanes: vec![0],
            ..wire.clone()
        };
        let e = confirmation(&bad_lane).unwrap_err();
        assert!(e.message().starts_with("policy.yolo_lanes[0]"), "{e:?}");
        let bad_action = pb::ConfirmationPolicy {
            timeout_action: 7,
            ..wire.clone()
        };
        assert!(confirmation(&bad_action).is_err());
        let empty_tool = pb::ConfirmationPolicy {
            require_confirm_tools: vec![" ".into()],
            ..wire
        };
        let e = confirmation(&empty_tool).unwrap_err();
        assert!(
            e.message().starts_with("policy.require_confirm_tools[0]"),
            "{e:?}"
        );
    }

    #[test]
    fn asking_turns_approval_never_into_on_request_and_nothing_else() {
        let mut policy = ThreadPolicy::default();
        assert_eq!(answerable(policy.clone()).approval, ApprovalPolicy::Never);
        policy.confirmation.enabled = true;
        assert_eq!(
            answerable(policy.clone()).approval,
            ApprovalPolicy::OnRequest
        );
        policy.approval = ApprovalPolicy::Untrusted;
        assert_eq!(
            answerable(policy.clone()).approval,
            ApprovalPolicy::Untrusted
        );
        let mut rules = ThreadPolicy::default();
        rules.permissions.enabled = true;
        rules.permissions.deny = vec!["Bash(rm:*)".into()];
        assert_eq!(answerable(rules.clone()).approval, ApprovalPolicy::Never);
        rules.permissions.ask = vec!["Bash(git push:*)".into()];
        assert_eq!(answerable(rules).approval, ApprovalPolicy::OnRequest);
    }
}

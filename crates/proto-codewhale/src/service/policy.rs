//! CodeWhale's approval policy (`AskForApproval`) and sandbox names onto
//! Gantry's `ApprovalPolicy` and `SandboxMode`, both ways. A policy comes
//! as a string: the `AskForApproval` name (`on_request`), codex's kebab
//! spelling (`on-request`, `untrusted`), or an `AskForApproval` as JSON
//! (`{"reject":{...}}`).

use gantry_types::{ApprovalPolicy, RejectConfig, SandboxMode};

use crate::wire::AskForApproval;

/// The approval policy a client named.
pub(crate) fn parse_approval(text: &str) -> Result<ApprovalPolicy, String> {
    let text = text.trim();
    let ask = if text.starts_with('{') {
        serde_json::from_str::<AskForApproval>(text)
            .map_err(|e| format!("approval_policy `{text}`: {e}"))?
    } else {
        match text.replace('-', "_").as_str() {
            "unless_trusted" | "untrusted" => AskForApproval::UnlessTrusted,
            "on_failure" => AskForApproval::OnFailure,
            "on_request" => AskForApproval::OnRequest,
            "never" => AskForApproval::Never,
            // The bare name refuses every kind of prompt.
            "reject" => AskForApproval::Reject {
                sandbox_approval: true,
                rules: true,
                mcp_elicitations: true,
            },
            _ => {
                return Err(format!(
                    "approval_policy `{text}`: expected unless_trusted, on_failure, on_request, \
                     never or reject"
                ));
            }
        }
    };
    Ok(to_gantry(ask))
}

fn to_gantry(ask: AskForApproval) -> ApprovalPolicy {
    match ask {
        AskForApproval::UnlessTrusted => ApprovalPolicy::Untrusted,
        AskForApproval::OnFailure => ApprovalPolicy::OnFailure,
        AskForApproval::OnRequest => ApprovalPolicy::OnRequest,
        AskForApproval::Never => ApprovalPolicy::Never,
        AskForApproval::Reject {
            sandbox_approval,
            rules,
            mcp_elicitations,
        } => ApprovalPolicy::Reject(RejectConfig {
            sandbox_approval,
            rules,
            mcp_elicitations,
        }),
    }
}

/// The sandbox a client named (`read-only`, `workspace-write`,
/// `danger-full-access`, or the same with `_`).
pub(crate) fn parse_sandbox(text: &str) -> Result<SandboxMode, String> {
    match text.trim().replace('_', "-").as_str() {
        "read-only" => Ok(SandboxMode::ReadOnly),
        "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
        "danger-full-access" => Ok(SandboxMode::DangerFullAccess),
        other => Err(format!(
            "sandbox `{other}`: expected read-only, workspace-write or danger-full-access"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_policy_reads_and_names_back() {
        assert_eq!(parse_approval("on-request"), Ok(ApprovalPolicy::OnRequest));
        assert_eq!(
            parse_approval("unless_trusted"),
            Ok(ApprovalPolicy::Untrusted)
        );
        assert_eq!(parse_approval("untrusted"), Ok(ApprovalPolicy::Untrusted));
        let reject = parse_approval(
            r#"{"reject":{"sandbox_approval":false,"rules":true,"mcp_elicitations":false}}"#,
        );
        assert_eq!(
            reject,
            Ok(ApprovalPolicy::Reject(RejectConfig {
                rules: true,
                ..RejectConfig::default()
            }))
        );
        assert!(parse_approval("sometimes").is_err());
        assert_eq!(parse_sandbox("read_only"), Ok(SandboxMode::ReadOnly));
        assert!(parse_sandbox("none").is_err());
    }
}

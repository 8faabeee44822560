//! Permission rules: set, get, check, add.
//!
//! Rules are `Tool` or `Tool(specifier)` (`Bash(cargo:*)`, `Read(src/**)`,
//! `mcp__server__*`; Gantry's tool names work too). Deny beats ask, ask
//! beats allow; a call no rule matches gets the default decision. A denied
//! call is not run: the model is told why, and `SubscribeEvents` reports
//! `PERMISSION_DENIED`. An asked call waits for `ConfirmToolExecution`.

use gantry_core::policy::Rule;
use gantry_grpc::clip;
use gantry_types::{PermissionRules, RuleDecision};
use serde_json::Value;
use tonic::Status;

use super::Ctx;
use super::hitl::{answerable, change_policy};
use crate::names;
use crate::pb;
use crate::status::{required, session_id, status};

/// `SetPermissionPolicy`: replaces the session's rules (from its next tool
/// call on). Every rule must parse: an invalid deny rule would match every
/// call of its tool, an invalid allow rule none. An unset
/// `default_decision` is `allow`.
pub(crate) async fn set_permission_policy(
    ctx: &Ctx,
    req: pb::SetPermissionPolicyRequest,
) -> Result<pb::SetPermissionPolicyResponse, Status> {
    let id = session_id(&req.session_id)?;
    let wire = req
        .policy
        .ok_or_else(|| Status::invalid_argument("policy: required"))?;
    let rules = PermissionRules {
        enabled: wire.enabled,
        allow: rules("policy.allow", &wire.allow)?,
        ask: rules("policy.ask", &wire.ask)?,
        deny: rules("policy.deny", &wire.deny)?,
        default: decision(wire.default_decision)?,
    };
    let stored = change_policy(ctx, &id, |p| p.permissions = rules).await?;
    Ok(pb::SetPermissionPolicyResponse {
        success: true,
        policy: Some(pb_policy(&stored.permissions)),
    })
}

/// `GetPermissionPolicy`: the session's rules.
pub(crate) async fn get_permission_policy(
    ctx: &Ctx,
    req: pb::GetPermissionPolicyRequest,
) -> Result<pb::GetPermissionPolicyResponse, Status> {
    let id = session_id(&req.session_id)?;
    let view = ctx.engine.threads().read(&id).await.map_err(status)?;
    Ok(pb::GetPermissionPolicyResponse {
        policy: Some(pb_policy(&view.thread.policy.permissions)),
    })
}

/// `CheckPermission`: what the session's rules say about a call of
/// `tool_name` (A3S's names, `Bash`, `Read`, ..., or Gantry's) with
/// `arguments`, and the rules that decided it. The arguments are a JSON
/// object (A3S's `file_path` works for the file tools); other text is, as
/// A3S takes it, the command of a shell call or the path of a file tool.
/// With the rules disabled every call is allowed. Only the rules: the
/// confirmation policy may still ask about an allowed call.
pub(crate) async fn check_permission(
    ctx: &Ctx,
    req: pb::CheckPermissionRequest,
) -> Result<pb::CheckPermissionResponse, Status> {
    let id = session_id(&req.session_id)?;
    let tool = names::engine(required("tool_name", &req.tool_name)?);
    let mut args = arguments(tool, &req.arguments)?;
    names::engine_arguments(tool, &mut args);
    let (decision, rules) = ctx
        .engine
        .safety()
        .check_permission(&id, tool, &args)
        .await
        .map_err(status)?;
    Ok(pb::CheckPermissionResponse {
        decision: pb_decision(decision) as i32,
        matching_rules: rules,
    })
}

/// `AddPermissionRule`: appends a rule to the `allow`, `deny` or `ask`
/// list (once: a rule already there is not added again) and turns the
/// rules on, since a rule is added to be applied.
pub(crate) async fn add_permission_rule(
    ctx: &Ctx,
    req: pb::AddPermissionRuleRequest,
) -> Result<pb::AddPermissionRuleResponse, Status> {
    let id = session_id(&req.session_id)?;
    let kind = rule_kind(&req.rule_type)?;
    let rule = required("rule", &req.rule)?;
    Rule::parse(rule).map_err(|e| Status::invalid_argument(format!("rule: {e}")))?;
    let mut policy = ctx.live_session(&id).await?.thread.policy.clone();
    let rules = &mut policy.permissions;
    let list = match kind {
        RuleDecision::Allow => &mut rules.allow,
        RuleDecision::Ask => &mut rules.ask,
        RuleDecision::Deny => &mut rules.deny,
    };
    if !list.iter().any(|r| r == rule) {
        list.push(rule.to_owned());
    }
    rules.enabled = true;
    ctx.engine
        .safety()
        .set_policy(&id, answerable(policy))
        .await
        .map_err(status)?;
    Ok(pb::AddPermissionRuleResponse {
        success: true,
        error: String::new(),
    })
}

/// The rules of one list (`field`), trimmed and checked.
fn rules(field: &str, wire: &[pb::PermissionRule]) -> Result<Vec<String>, Status> {
    wire.iter()
        .enumerate()
        .map(|(i, r)| {
            let at = format!("{field}[{i}]");
            let rule = required(&at, &r.rule)?;
            Rule::parse(rule).map_err(|e| Status::invalid_argument(format!("{at}: {e}")))?;
            Ok(rule.to_owned())
        })
        .collect()
}

/// The list `rule_type` names.
fn rule_kind(rule_type: &str) -> Result<RuleDecision, Status> {
    match rule_type.trim().to_ascii_lowercase().as_str() {
        "allow" => Ok(RuleDecision::Allow),
        "ask" => Ok(RuleDecision::Ask),
        "deny" => Ok(RuleDecision::Deny),
        "" => Err(Status::invalid_argument(
            "rule_type: required (allow, deny or ask)",
        )),
        other => Err(Status::invalid_argument(format!(
            "rule_type: `{other}` is not allow, deny or ask",
            other = clip(other)
        ))),
    }
}

/// A call of the engine's `tool`'s arguments: a JSON object, `{}` when
/// empty; text that is no JSON object is the command of a shell call or the
/// path of a file tool (what A3S clients send: `"cargo test"`).
fn arguments(tool: &str, text: &str) -> Result<Value, Status> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(text) {
        return Ok(value);
    }
    let field = match tool {
        "shell" => "command",
        "read_file" | "write_file" | "edit_file" | "list_dir" | "glob" | "grep" => "path",
        _ => {
            return Err(Status::invalid_argument(
                "arguments: must be a JSON object for this tool",
            ));
        }
    };
    Ok(serde_json::json!({ field: text }))
}

/// The default decision from the wire; unset is `allow` (Gantry's default).
fn decision(value: i32) -> Result<RuleDecision, Status> {
    match pb::PermissionDecision::try_from(value) {
        Ok(pb::PermissionDecision::Unknown | pb::PermissionDecision::Allow) => {
            Ok(RuleDecision::Allow)
        }
        Ok(pb::PermissionDecision::Ask) => Ok(RuleDecision::Ask),
        Ok(pb::PermissionDecision::Deny) => Ok(RuleDecision::Deny),
        Err(_) => Err(Status::invalid_argument(format!(
            "policy.default_decision: unknown value {value}"
        ))),
    }
}

/// The proto's `PermissionDecision`.
fn pb_decision(decision: RuleDecision) -> pb::PermissionDecision {
    match decision {
        RuleDecision::Allow => pb::PermissionDecision::Allow,
        RuleDecision::Ask => pb::PermissionDecision::Ask,
        RuleDecision::Deny => pb::PermissionDecision::Deny,
    }
}

/// The proto's `PermissionPolicy`.
fn pb_policy(rules: &PermissionRules) -> pb::PermissionPolicy {
    let list = |rules: &[String]| {
        rules
            .iter()
            .map(|r| pb::PermissionRule { rule: r.clone() })
            .collect()
    };
    pb::PermissionPolicy {
        deny: list(&rules.deny),
        allow: list(&rules.allow),
        ask: list(&rules.ask),
        default_decision: pb_decision(rules.default) as i32,
        enabled: rules.enabled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(r: &str) -> pb::PermissionRule {
        pb::PermissionRule { rule: r.into() }
    }

    #[test]
    fn rules_are_checked_and_named_by_their_place() {
        assert_eq!(
            rules("policy.deny", &[rule(" Bash(rm:*) "), rule("Read(src/**)")]).unwrap(),
            ["Bash(rm:*)", "Read(src/**)"]
        );
        let e = rules("policy.allow", &[rule("Bash"), rule("Bash(")]).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        assert!(e.message().starts_with("policy.allow[1]:"), "{e:?}");
        assert!(rules("policy.ask", &[rule("")]).is_err());
    }

    #[test]
    fn wire_values_are_checked() {
        assert_eq!(rule_kind(" Deny ").unwrap(), RuleDecision::Deny);
        assert!(rule_kind("block").unwrap_err().message().contains("block"));
        assert_eq!(decision(0).unwrap(), RuleDecision::Allow);
        assert_eq!(decision(3).unwrap(), RuleDecision::Ask);
        assert!(decision(4).is_err());
        assert_eq!(arguments("shell", "").unwrap(), serde_json::json!({}));
        assert_eq!(
            arguments("shell", "cargo test").unwrap(),
            serde_json::json!({"command": "cargo test"})
        );
        assert_eq!(
            arguments("read_file", "src/lib.rs").unwrap(),
            serde_json::json!({"path": "src/lib.rs"})
        );
        assert!(arguments("mcp__x__y", "{oops").is_err());
        assert!(arguments("mcp__x__y", "[1]").is_err());
    }
}

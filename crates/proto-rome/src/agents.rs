//! Rome's agents are the engine's agents, found by id or name. What Rome
//! needs beyond the engine's agent (the tools it may call, the schema of
//! its final answer) is its [`AgentProfile`], declared in Gantry's config
//! file.

use std::collections::BTreeMap;
use std::path::Path;

use gantry_core::{Engine, EngineError};
use gantry_types::skill::SkillSource;
use gantry_types::{Agent, AgentId, PermissionRules, RuleDecision, ThreadPolicy};
use serde_json::Value;

/// What a Rome agent adds to the engine's agent of the same name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentProfile {
    /// The tools (permission rules: `shell`, `Bash(git *)`, `read_file`,
    /// `mcp__server__*`) it may call; `None`: every tool the engine offers.
    pub allowed_tools: Option<Vec<String>>,
    /// A JSON Schema its final answer follows: its turns answer through
    /// `submit_output` and stream `structured_output`.
    pub output_schema: Option<Value>,
}

/// Profiles by agent name.
pub type Profiles = BTreeMap<String, AgentProfile>;

/// An agent a run names, found.
#[derive(Debug, Clone)]
pub(crate) struct RomeAgent {
    pub agent: Agent,
    pub profile: AgentProfile,
}

impl RomeAgent {
    /// The policy of its sessions: only its allowed tools, when it has a list.
    pub(crate) fn policy(&self) -> ThreadPolicy {
        match &self.profile.allowed_tools {
            None => ThreadPolicy::default(),
            Some(allowed) => ThreadPolicy {
                permissions: PermissionRules {
                    enabled: true,
                    allow: allowed.clone(),
                    default: RuleDecision::Deny,
                    ..PermissionRules::default()
                },
                ..ThreadPolicy::default()
            },
        }
    }
}

/// The agent named `name` (its id, else its name), with its profile.
pub(crate) async fn find(
    engine: &Engine,
    profiles: &Profiles,
    name: &str,
) -> Result<Option<RomeAgent>, EngineError> {
    let agent = match engine.agents().get(&AgentId::from(name)).await {
        Ok(agent) => agent,
        Err(EngineError::NotFound { .. }) => {
            match engine
                .agents()
                .list()
                .await?
                .into_iter()
                .find(|a| a.name == name)
            {
                Some(agent) => agent,
                None => return Ok(None),
            }
        }
        Err(e) => return Err(e),
    };
    let profile = profiles
        .get(name)
        .or_else(|| profiles.get(agent.id.as_str()))
        .cloned()
        .unwrap_or_default();
    Ok(Some(RomeAgent { agent, profile }))
}

/// Whether `agent` may call `action`: a tool its allowed list names (or
/// `*`), else, with no list, a tool the engine offers.
/// The tools the engine offers (`None` profile list: all of them) and the
/// skills the agent has: those installed for it, then the ones a session in
/// `workspace` discovers (its `.gantry/skills`, the user's config dir).
pub(crate) async fn may_call(
    engine: &Engine,
    agent: &RomeAgent,
    workspace: &Path,
    action: &str,
) -> Result<bool, EngineError> {
    let allowed = agent.profile.allowed_tools.as_deref();
    let tool_allowed = match allowed {
        Some(rules) => rules.iter().any(|rule| rule_allows(rule, action)),
        None => {
            engine.tool_specs().iter().any(|t| t.name == action)
                || engine
                    .mcp()
                    .tools()
                    .await
                    .iter()
                    .any(|t| t.full_name == action)
        }
    };
    if tool_allowed {
        return Ok(true);
    }
    if !has_skill(engine, agent, workspace, action).await? {
        return Ok(false);
    }
    Ok(allowed.is_none_or(|rules| rules.iter().any(|rule| rule_allows_skill(rule, action))))
}

/// Whether `name` is one of the agent's skills.
async fn has_skill(
    engine: &Engine,
    agent: &RomeAgent,
    workspace: &Path,
    name: &str,
) -> Result<bool, EngineError> {
    if let Some(dir) = engine.agents().skills_dir(&agent.agent.id) {
        let (installed, _) = engine
            .skills()
            .read_dir(dir, SkillSource::Installed)
            .await?;
        if installed.iter().any(|s| s.name == name) {
            return Ok(true);
        }
    }
    let discovered = engine.skills().discover(workspace.to_path_buf()).await?;
    Ok(discovered.iter().any(|s| s.name == name))
}

/// Whether an allow rule lets the agent use the skill `name`: `skill`,
/// `Skill`, `Skill(name)`, or a wildcard.
fn rule_allows_skill(rule: &str, name: &str) -> bool {
    let (tool, arg) = match rule.split_once('(') {
        Some((tool, rest)) => (tool.trim(), rest.strip_suffix(')').map(str::trim)),
        None => (rule.trim(), None),
    };
    let tool_matches = tool == "*" || canonical(tool) == "skill";
    tool_matches && arg.is_none_or(|arg| arg == "*" || arg == name)
}

/// Whether an allow rule names `action` (whatever its parenthesised part).
fn rule_allows(rule: &str, action: &str) -> bool {
    let tool = rule.split_once('(').map_or(rule, |(tool, _)| tool).trim();
    if tool == "*" {
        return true;
    }
    if let Some(prefix) = tool.strip_suffix('*') {
        return action.starts_with(prefix);
    }
    canonical(tool) == canonical(action)
}

/// Claude Code's tool names as Gantry's (the permission rules take both).
fn canonical(name: &str) -> &str {
    match name {
        "Bash" => "shell",
        "Read" => "read_file",
        "Write" => "write_file",
        "Edit" | "MultiEdit" => "edit_file",
        "Grep" => "grep",
        "Glob" => "glob",
        "LS" => "list_dir",
        "Skill" => "skill",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_name_tools_in_either_vocabulary() {
        assert!(rule_allows("Bash(git *)", "shell"));
        assert!(rule_allows("shell", "Bash"));
        assert!(rule_allows("read_file", "read_file"));
        assert!(rule_allows("mcp__docs__*", "mcp__docs__search"));
        assert!(rule_allows("*", "anything"));
        assert!(!rule_allows("read_file", "write_file"));
        assert!(!rule_allows("Edit", "shell"));
    }

    #[test]
    fn skill_rules_name_the_skill_tool_or_one_skill() {
        assert!(rule_allows_skill("Skill", "deploy"));
        assert!(rule_allows_skill("skill", "deploy"));
        assert!(rule_allows_skill("Skill(deploy)", "deploy"));
        assert!(rule_allows_skill("*", "deploy"));
        assert!(!rule_allows_skill("Skill(review)", "deploy"));
        assert!(!rule_allows_skill("read_file", "deploy"));
    }
}

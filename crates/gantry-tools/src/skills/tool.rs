//! `skill`: the model invokes a skill by name and gets its instructions.

use async_trait::async_trait;
use gantry_types::{ItemKind, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use super::set::catalog_lines;
use super::{SharedSkillSet, SkillSet, available_list};
use crate::common::{
    parse_args, run_blocking, tool_call_interrupted, tool_call_output, tool_call_start,
};
use crate::{Tool, ToolContext, ToolOutput};

const NAME: &str = "skill";

/// The `skill` tool of one thread. Invoking a skill loads it in the
/// thread's [`SkillSet`], so its `allowed-tools` show up in
/// [`SkillSet::active_allowed_tools`] (unless it is a workspace skill in a
/// workspace the operator has not trusted; its result then says so).
#[derive(Clone)]
pub struct SkillTool {
    skills: SharedSkillSet,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillArgs {
    name: String,
}

impl SkillTool {
    /// The tool over a thread's skills.
    pub fn new(skills: SharedSkillSet) -> Self {
        Self { skills }
    }

    /// The skills it serves.
    pub fn skills(&self) -> &SharedSkillSet {
        &self.skills
    }

    /// The skill name a call asks for, if its arguments name one; lets the
    /// engine look up that skill's `allowed_tools` for the call.
    pub fn invoked_skill(args: &Value) -> Option<&str> {
        args.get("name").and_then(Value::as_str)
    }

    fn with_set<T>(&self, f: impl FnOnce(&SkillSet) -> T) -> T {
        // A poisoned lock only means a panic elsewhere mid-update; the set
        // is plain data and still consistent enough to read.
        let guard = self.skills.read().unwrap_or_else(|e| e.into_inner());
        f(&guard)
    }
}

#[async_trait]
impl Tool for SkillTool {
    fn spec(&self) -> ToolSpec {
        let listing = self.with_set(|set| catalog_lines(&set.available()));
        let mut description = String::from(
            "Invoke a skill: packaged instructions for a specific kind of task. When a task \
             matches a skill's description, call this first with the skill's name; its \
             instructions come back as the result, then follow them.",
        );
        if listing.is_empty() {
            description.push_str(" No skills are available in this thread.");
        } else {
            description.push_str("\n\nAvailable skills:\n");
            description.push_str(&listing);
        }
        ToolSpec {
            name: NAME.into(),
            description,
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The skill's name, as listed."}
                },
                "required": ["name"],
                "additionalProperties": false
            }),
        }
    }

    fn start_item(&self, args: &Value, _ctx: &ToolContext) -> ItemKind {
        tool_call_start(NAME, args)
    }

    async fn run(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let skill = parse_args::<SkillArgs>(NAME, &args).and_then(|a| {
            let mut set = self.skills.write().unwrap_or_else(|e| e.into_inner());
            let available = available_list(&set.available_names());
            match set.get(&a.name) {
                None => Err(format!("skill: unknown skill `{}`; {available}", a.name)),
                Some(s) if !s.model_invocable() => Err(format!(
                    "skill: `{}` can only be loaded by the user, not invoked by the model \
                     (disable-model-invocation); {available}",
                    a.name
                )),
                Some(s) => {
                    let s = s.clone();
                    let granted = set.grants(&s);
                    // Invoking is loading: the engine applies the skill's
                    // allowed-tools from the set's loaded skills.
                    let _ = set.invoke(&s.name);
                    Ok((s, granted))
                }
            }
        });
        let result = match skill {
            Err(msg) => Err(msg),
            // Listing the extra files touches the disk; keep it off the
            // async threads and cancellable.
            Ok((skill, granted)) => {
                match run_blocking(&ctx.cancel, move |_| Ok(skill.instructions(granted))).await {
                    Some(r) => r,
                    None => return tool_call_interrupted(NAME, &args),
                }
            }
        };
        tool_call_output(NAME, &args, result)
    }
}

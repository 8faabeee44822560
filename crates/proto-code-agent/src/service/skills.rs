//! Skills (Claude Code's `SKILL.md` format): load into and unload from a
//! session, list a session's or the server workspace's, read them whole.
//!
//! A skill brings instructions and an `allowed-tools` list of permission
//! patterns (`Bash(gh:*)`, `Read`): rules allowed without asking while it
//! is loaded. That list is what `Skill.allowed_tools` carries; a skill adds
//! no tool of its own. `LoadSkillResponse.tool_names` and
//! `UnloadSkillResponse.removed_tools` carry the rules that take effect:
//! none for a workspace skill (`.gantry/skills`, `.claude/skills`) in a
//! workspace the operator has not trusted, whose `allowed-tools` add no
//! rights (`metadata.allowed_tools_granted` says which).
//!
//! A3S's skills are the server's: a skill a client loads inline is
//! remembered by the server, listed without a session, and loaded into
//! sessions created afterwards.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use gantry_core::Skill;
use gantry_grpc::clip;
use gantry_types::ThreadId;
use gantry_types::skill::{SkillListing, SkillSource};
use tonic::Status;

use super::Ctx;
use crate::pb;
use crate::status::{required, session_id, status};

/// `LoadSkill`: loads a skill into the session: its instructions enter the
/// context of the next model requests and its `allowed-tools` apply. With
/// `skill_content` (the text of a `SKILL.md`) the skill is added inline,
/// replacing a discovered one of the same name until unloaded; otherwise
/// `skill_name` names one of the session's skills (`NOT_FOUND` if none).
/// `tool_names`: the skill's `allowed-tools` patterns that take effect
/// (none when the engine ignores them: a workspace skill in a workspace
/// the operator has not trusted).
pub(crate) async fn load_skill(
    ctx: &Ctx,
    req: pb::LoadSkillRequest,
) -> Result<pb::LoadSkillResponse, Status> {
    let content = req.skill_content.as_deref().map(str::trim);
    let content = content.filter(|c| !c.is_empty());
    if let (Some(text), "") = (content, req.session_id.trim()) {
        // The server's skill only: A3S takes a skill without a session.
        let skill = parse_inline(req.skill_name.trim(), text)?;
        ctx.remember_skill(&skill.name, text);
        return Ok(pb::LoadSkillResponse {
            success: true,
            tool_names: skill.allowed_tools,
        });
    }
    let id = session_id(&req.session_id)?;
    let name = match content {
        Some(text) => load_inline(ctx, &id, req.skill_name.trim(), text).await?,
        None => {
            let name = required("skill_name", &req.skill_name)?;
            listing(&session_skills(ctx, &id).await?, name)?;
            ctx.engine.skills().load(&id, name).await.map_err(status)?;
            name.to_owned()
        }
    };
    let skill = listing(&session_skills(ctx, &id).await?, &name)?.clone();
    Ok(pb::LoadSkillResponse {
        success: true,
        tool_names: granted(skill),
    })
}

/// Adds and loads the inline skill `text`; its name. A `skill_name` given
/// with it must be the name in its front matter.
async fn load_inline(ctx: &Ctx, id: &ThreadId, name: &str, text: &str) -> Result<String, Status> {
    // Parsed here first so a bad text is reported against its field.
    parse_inline(name, text)?;
    let name = ctx
        .engine
        .skills()
        .load_inline(id, text)
        .await
        .map_err(status)?;
    ctx.remember_skill(&name, text);
    Ok(name)
}

/// The skill of an inline `SKILL.md` text; a `skill_name` given with it
/// must be the name in its front matter.
fn parse_inline(name: &str, text: &str) -> Result<Skill, Status> {
    let skill = Skill::parse(text, None)
        .map_err(|e| Status::invalid_argument(format!("skill_content: {e}")))?;
    if !name.is_empty() && name != skill.name {
        return Err(Status::invalid_argument(format!(
            "skill_name: `{name}` is not the name in skill_content (`{}`)",
            skill.name,
            name = clip(name)
        )));
    }
    Ok(skill)
}

/// `UnloadSkill`: unloads a loaded skill (`NOT_FOUND` for an unknown
/// skill, `FAILED_PRECONDITION` for one not loaded). An inline skill is
/// dropped, and the discovered skill it replaced, if any, is back
/// (unloaded). `removed_tools`: the skill's `allowed-tools` patterns that
/// were in effect and no other loaded skill still allows.
pub(crate) async fn unload_skill(
    ctx: &Ctx,
    req: pb::UnloadSkillRequest,
) -> Result<pb::UnloadSkillResponse, Status> {
    let name = required("skill_name", &req.skill_name)?;
    if req.session_id.trim().is_empty() {
        // The server's skill only.
        let known = ctx.loaded_skills().contains_key(name);
        ctx.forget_skill(name);
        if !known {
            return Err(unknown_skill(name, &[]));
        }
        return Ok(pb::UnloadSkillResponse {
            success: true,
            removed_tools: Vec::new(),
        });
    }
    let id = session_id(&req.session_id)?;
    let skill = listing(&session_skills(ctx, &id).await?, name)?.clone();
    ctx.forget_skill(name);
    let was_loaded = ctx
        .engine
        .skills()
        .unload(&id, name)
        .await
        .map_err(status)?;
    if !was_loaded {
        return Err(Status::failed_precondition(format!(
            "skill `{name}` is not loaded",
            name = clip(name)
        )));
    }
    let still_allowed: BTreeSet<String> = session_skills(ctx, &id)
        .await?
        .into_iter()
        .filter(|s| s.loaded)
        .flat_map(granted)
        .collect();
    let removed_tools = granted(skill)
        .into_iter()
        .filter(|t| !still_allowed.contains(t))
        .collect();
    Ok(pb::UnloadSkillResponse {
        success: true,
        removed_tools,
    })
}

/// `ListSkills`: with a session, its skills (discovered when it went live,
/// its agent's installed ones, inline ones) with whether each is loaded;
/// without one (absent or empty), the server's skills: those clients loaded
/// and those a new session in the server workspace would find
/// (`.gantry/skills`, `.claude/skills`, the user's config dir).
/// `allowed_tools` joins the `allowed-tools` patterns; `metadata` has `source`
/// (workspace, claude, user, inline, installed), `model_invocable`,
/// `loaded` and `allowed_tools_granted` (sessions only: whether those
/// patterns take effect) and `dir` (skills with a folder).
pub(crate) async fn list_skills(
    ctx: &Ctx,
    req: pb::ListSkillsRequest,
) -> Result<pb::ListSkillsResponse, Status> {
    let session = req.session_id.as_deref().map(str::trim);
    let skills = match session.filter(|s| !s.is_empty()) {
        Some(session) => {
            let id = session_id(session)?;
            session_skills(ctx, &id)
                .await?
                .into_iter()
                .map(listed_skill)
                .collect()
        }
        None => server_skills(ctx)
            .await?
            .into_iter()
            .map(discovered_skill)
            .collect(),
    };
    Ok(pb::ListSkillsResponse { skills })
}

/// `GetClaudeCodeSkills`: the skills of the server workspace (and the
/// user's config dir) in Claude Code's format, with their instructions;
/// only the one called `name` when given (`NOT_FOUND` if none is).
/// `allowed_tools` is the `allowed-tools` patterns joined by `, `.
pub(crate) async fn get_claude_code_skills(
    ctx: &Ctx,
    req: pb::GetClaudeCodeSkillsRequest,
) -> Result<pb::GetClaudeCodeSkillsResponse, Status> {
    let mut skills = server_skills(ctx).await?;
    if let Some(name) = req.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        let names: Vec<String> = skills.iter().map(|s| s.name.clone()).collect();
        skills.retain(|s| s.name == name);
        if skills.is_empty() {
            return Err(unknown_skill(name, &names));
        }
    }
    Ok(pb::GetClaudeCodeSkillsResponse {
        skills: skills.into_iter().map(claude_code_skill).collect(),
    })
}

/// The `allowed-tools` patterns of a session's skill that take effect.
fn granted(skill: SkillListing) -> Vec<String> {
    if skill.allowed_tools_granted {
        skill.allowed_tools
    } else {
        Vec::new()
    }
}

/// The session's skills, by name.
async fn session_skills(ctx: &Ctx, id: &ThreadId) -> Result<Vec<SkillListing>, Status> {
    ctx.engine.skills().list(id).await.map_err(status)
}

/// The skill called `name` among `skills`; `NOT_FOUND` naming those there are.
fn listing<'a>(skills: &'a [SkillListing], name: &str) -> Result<&'a SkillListing, Status> {
    skills.iter().find(|s| s.name == name).ok_or_else(|| {
        let names: Vec<String> = skills.iter().map(|s| s.name.clone()).collect();
        unknown_skill(name, &names)
    })
}

/// `NOT_FOUND` for the skill `name`, listing the `available` ones.
fn unknown_skill(name: &str, available: &[String]) -> Status {
    let available = if available.is_empty() {
        "no skills are available".to_owned()
    } else {
        format!("available skills: {}", available.join(", "))
    };
    Status::not_found(format!(
        "skill `{name}` not found; {available}",
        name = clip(name)
    ))
}

/// The server's skills: those clients loaded over this service (they
/// replace a discovered one of the same name), then those discovered for
/// the server workspace and the user, as a session started there finds them.
pub(super) async fn server_skills(ctx: &Ctx) -> Result<Vec<Skill>, Status> {
    let mut skills: Vec<Skill> = ctx
        .loaded_skills()
        .values()
        .filter_map(|text| Skill::parse(text, None).ok())
        .map(|mut skill| {
            skill.source = SkillSource::Inline;
            skill
        })
        .collect();
    let discovered = workspace_skills(ctx, ctx.workspace()).await?;
    for skill in discovered {
        if !skills.iter().any(|s| s.name == skill.name) {
            skills.push(skill);
        }
    }
    Ok(skills)
}

/// The skills discovered for `workspace` and the user, as a session started
/// there would find them.
async fn workspace_skills(ctx: &Ctx, workspace: PathBuf) -> Result<Vec<Skill>, Status> {
    ctx.engine
        .skills()
        .discover(workspace)
        .await
        .map_err(status)
}

/// A session's skill as the proto's `Skill`.
fn listed_skill(skill: SkillListing) -> pb::Skill {
    let mut metadata = metadata(skill.source, skill.dir.as_deref(), skill.model_invocable);
    metadata.insert("loaded".to_owned(), skill.loaded.to_string());
    metadata.insert(
        "allowed_tools_granted".to_owned(),
        skill.allowed_tools_granted.to_string(),
    );
    pb::Skill {
        name: skill.name,
        description: skill.description,
        allowed_tools: joined(&skill.allowed_tools),
        disable_model_invocation: false,
        content: String::new(),
        metadata,
        kind: "instruction".to_owned(),
    }
}

/// `allowed-tools` patterns as one line (A3S's `allowed_tools`).
fn joined(patterns: &[String]) -> Option<String> {
    (!patterns.is_empty()).then(|| patterns.join(", "))
}

/// A discovered skill as the proto's `Skill`, with its instructions.
/// `disable_model_invocation` stays unset (a seed client reads field 4 as
/// a map): `metadata.model_invocable` says it.
pub(super) fn discovered_skill(skill: Skill) -> pb::Skill {
    pb::Skill {
        metadata: metadata(skill.source, skill.dir.as_deref(), skill.model_invocable()),
        allowed_tools: joined(&skill.allowed_tools),
        disable_model_invocation: false,
        content: skill.body,
        kind: "instruction".to_owned(),
        name: skill.name,
        description: skill.description,
    }
}

/// `Skill.metadata`: where the skill comes from and who may invoke it.
fn metadata(
    source: SkillSource,
    dir: Option<&Path>,
    model_invocable: bool,
) -> HashMap<String, String> {
    let source = match source {
        SkillSource::Workspace => "workspace",
        SkillSource::Claude => "claude",
        SkillSource::User => "user",
        SkillSource::Inline => "inline",
        SkillSource::Installed => "installed",
    };
    let mut metadata = HashMap::from([
        ("source".to_owned(), source.to_owned()),
        ("model_invocable".to_owned(), model_invocable.to_string()),
    ]);
    if let Some(dir) = dir {
        metadata.insert("dir".to_owned(), dir.display().to_string());
    }
    metadata
}

/// A skill in Claude Code's format.
fn claude_code_skill(skill: Skill) -> pb::ClaudeCodeSkill {
    pb::ClaudeCodeSkill {
        allowed_tools: joined(&skill.allowed_tools),
        disable_model_invocation: skill.disable_model_invocation,
        name: skill.name,
        description: skill.description,
        content: skill.body,
    }
}

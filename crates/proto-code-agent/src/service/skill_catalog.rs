//! The newer A3S proto's skill rpcs: read skills whole (`GetSkill`), find
//! them (`SearchSkills`), install a package (`InstallSkill`), and load a
//! folder of them (`LoadSkillsFromDir`). They work on the server's skills
//! (see `skills.rs`): those clients loaded plus those a session in the
//! server workspace discovers.

use std::path::{Path, PathBuf};

use gantry_grpc::clip;
use gantry_types::skill::SkillSource;
use tonic::Status;

use super::Ctx;
use super::skills::{discovered_skill, server_skills};
use crate::pb;
use crate::status::{required, session_id, status};

/// Search results when the request names no limit, and the most it may ask.
const SEARCH_LIMIT: (u32, u32) = (10, 30);

/// `GetSkill`: the server's skills with their instructions, or the one
/// called `name` (none when there is no such skill, as in A3S).
pub(crate) async fn get_skill(
    ctx: &Ctx,
    req: pb::GetSkillRequest,
) -> Result<pb::GetSkillResponse, Status> {
    let mut skills = server_skills(ctx).await?;
    if let Some(name) = req.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        skills.retain(|s| s.name == name);
    }
    Ok(pb::GetSkillResponse {
        skills: skills.into_iter().map(discovered_skill).collect(),
    })
}

/// `SearchSkills`: the server's skills whose name or description has every
/// word of `query` (any case), best first by how often they appear. A3S
/// searches GitHub; Gantry searches the skills it can reach (it goes to no
/// network for this), and `install_source` is what `InstallSkill` takes.
pub(crate) async fn search_skills(
    ctx: &Ctx,
    req: pb::SearchSkillsRequest,
) -> Result<pb::SearchSkillsResponse, Status> {
    let query = required("query", &req.query)?.to_lowercase();
    let words: Vec<&str> = query.split_whitespace().collect();
    let limit = match req.limit {
        0 => SEARCH_LIMIT.0,
        n => n.min(SEARCH_LIMIT.1),
    } as usize;
    let mut found: Vec<(usize, pb::SkillSearchResult)> = server_skills(ctx)
        .await?
        .into_iter()
        .filter_map(|skill| {
            let text = format!("{} {}", skill.name, skill.description).to_lowercase();
            let hits: Vec<usize> = words.iter().map(|w| text.matches(w).count()).collect();
            if hits.contains(&0) {
                return None;
            }
            let dir = skill.dir.as_deref().map(|d| d.display().to_string());
            let source = match skill.source {
                SkillSource::Workspace => "workspace",
                SkillSource::Claude => "claude",
                SkillSource::User => "user",
                SkillSource::Inline => "inline",
                SkillSource::Installed => "installed",
            };
            Some((
                hits.iter().sum(),
                pb::SkillSearchResult {
                    url: dir
                        .as_ref()
                        .map(|d| format!("file://{d}"))
                        .unwrap_or_default(),
                    install_source: dir.unwrap_or_else(|| skill.name.clone()),
                    name: skill.name,
                    description: skill.description,
                    stars: 0,
                    topics: vec![source.to_owned()],
                },
            ))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    let total_count = crate::views::u32_of(found.len());
    Ok(pb::SearchSkillsResponse {
        results: found.into_iter().take(limit).map(|(_, r)| r).collect(),
        total_count,
    })
}

/// `InstallSkill`: installs the skill package `source` (a local folder, a
/// `.tar.gz`/`.zip` URL or a git URL) into the workspace's
/// `.gantry/skills` (the session's workspace, else the server's), or with
/// `global` into the user's skills folder; sessions discover it from then
/// on. A failed install is `success: false` with the reason in `message`.
pub(crate) async fn install_skill(
    ctx: &Ctx,
    req: pb::InstallSkillRequest,
) -> Result<pb::InstallSkillResponse, Status> {
    let source = required("source", &req.source)?;
    let dir = if req.global {
        ctx.engine.skills().user_dir().ok_or_else(|| {
            Status::failed_precondition("global: the server has no home directory")
        })?
    } else {
        let workspace = match req.session_id.as_deref().map(str::trim) {
            Some(id) if !id.is_empty() => {
                let id = session_id(id)?;
                PathBuf::from(&ctx.live_session(&id).await?.thread.cwd)
            }
            _ => ctx.workspace(),
        };
        workspace.join(".gantry/skills")
    };
    let names = match ctx.engine.skills().install(source, &dir).await {
        Ok(names) => names,
        Err(e) => {
            return Ok(pb::InstallSkillResponse {
                success: false,
                message: format!("Failed to install {}: {e}", clip(source)),
                installed_path: String::new(),
                skill_name: String::new(),
            });
        }
    };
    let first = names.first().cloned().unwrap_or_default();
    Ok(pb::InstallSkillResponse {
        success: true,
        message: format!("Installed {} from {}", names.join(", "), clip(source)),
        installed_path: dir.join(&first).display().to_string(),
        skill_name: first,
    })
}

/// `LoadSkillsFromDir`: loads the skills of `directory` (folders with a
/// `SKILL.md`, and `*.md` files with front matter, as A3S writes them;
/// with `recursive`, in its subfolders too) as the server's skills, and into
/// the session when one is named. `NOT_FOUND` for a missing directory;
/// skills that do not load are in `errors` (then `success` is false).
pub(crate) async fn load_skills_from_dir(
    ctx: &Ctx,
    req: pb::LoadSkillsFromDirRequest,
) -> Result<pb::LoadSkillsFromDirResponse, Status> {
    let directory = required("directory", &req.directory)?;
    let dir = PathBuf::from(directory);
    if !dir.is_dir() {
        return Err(Status::not_found(format!(
            "directory {} not found",
            clip(directory)
        )));
    }
    let session = match req.session_id.trim() {
        "" => None,
        id => {
            let id = session_id(id)?;
            ctx.live_session(&id).await?;
            Some(id)
        }
    };
    let mut loaded = Vec::new();
    let mut errors = Vec::new();
    for dir in folders(&dir, req.recursive) {
        let (skills, errs) = ctx
            .engine
            .skills()
            .read_dir(dir.clone(), SkillSource::Inline)
            .await
            .map_err(status)?;
        errors.extend(errs);
        let mut texts: Vec<(String, String)> = Vec::new();
        for skill in skills {
            if let Some(path) = skill.dir.as_ref().map(|d| d.join("SKILL.md")) {
                match std::fs::read_to_string(&path) {
                    Ok(text) => texts.push((skill.name, text)),
                    Err(e) => errors.push(format!("{}: {e}", path.display())),
                }
            }
        }
        texts.extend(markdown_files(&dir, &mut errors));
        for (name, text) in texts {
            if let Some(id) = &session
                && let Err(e) = ctx.engine.skills().load_inline(id, &text).await
            {
                errors.push(format!("{name}: {e}"));
                continue;
            }
            ctx.remember_skill(&name, &text);
            loaded.push(name);
        }
    }
    Ok(pb::LoadSkillsFromDirResponse {
        success: errors.is_empty(),
        loaded_skills: loaded,
        errors,
    })
}

/// `dir`, and with `recursive` every folder beneath it (hidden ones and
/// skill folders' insides aside).
fn folders(dir: &Path, recursive: bool) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    if !recursive {
        return out;
    }
    let mut i = 0;
    while i < out.len() {
        let current = out[i].clone();
        i += 1;
        if current.join("SKILL.md").is_file() && current != dir {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        let mut subdirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| e.path())
            .filter(|p| p.is_dir() && !p.join("SKILL.md").is_file())
            .collect();
        subdirs.sort();
        out.extend(subdirs);
    }
    out
}

/// The skills written as `*.md` files with front matter right in `dir`
/// (A3S's own layout): (name, text); files that are no skill go to `errors`.
fn markdown_files(dir: &Path, errors: &mut Vec<String>) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.extension().is_some_and(|e| e == "md")
                && p.file_name().is_some_and(|n| n != "SKILL.md")
        })
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                errors.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        if !text.trim_start().starts_with("---") {
            continue; // a README, not a skill
        }
        match gantry_core::Skill::parse(&text, None) {
            Ok(skill) => out.push((skill.name, text)),
            Err(e) => errors.push(format!("{}: {e}", path.display())),
        }
    }
    out
}
